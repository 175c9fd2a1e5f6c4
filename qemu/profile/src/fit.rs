//! The cost model fitted to measured times: chosen parameters (`hbm.load_cycles`,
//! `op.overhead_seconds`, any number of the TOML file's) set so that the model's
//! predicted times of profiled calls come closest to the times measured on the device,
//! with each parameter's error and each figure's residual and leave-one-out prediction.
//!
//! Least squares on the relative error, `predicted / measured − 1` per figure (a 10%
//! miss on a 100 µs call weighs as much as on a 10 ms one), by Gauss-Newton with
//! numeric derivatives: the model is linear in most parameters (then one step is the
//! answer), and a few steps converge on the others. A parameter's error is one standard error from the residuals' spread,
//! known only when there are more figures than parameters; a figure's leave-one-out
//! prediction is the model fitted to the other figures alone, which says how well the
//! model predicts a figure it was not fitted to.

use crate::cost::{CostModel, CostModelError};
use crate::profile::Profile;
use serde::Serialize;

/// One measured call: its profile and the time the device took.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// Its name in reports (`relu_tcm [2, 32768]`).
    pub name: &'a str,
    /// Its profile.
    pub profile: &'a Profile,
    /// Seconds it took on the device, as measured.
    pub seconds: f64,
}

/// One fitted parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fitted {
    /// Its key in the TOML file (`hbm.load_cycles`).
    pub key: String,
    /// Its fitted value.
    pub value: f64,
    /// One standard error; `None` when the figures are no more than the parameters
    /// (the fit then goes through every figure and says nothing of its error).
    pub error: Option<f64>,
}

/// One figure against the fitted model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Its name.
    pub name: String,
    /// Seconds measured.
    pub measured: f64,
    /// Seconds the fitted model predicts.
    pub predicted: f64,
    /// `predicted / measured − 1`.
    pub residual: f64,
    /// Seconds predicted by the model fitted to every other figure; `None` when the
    /// others are fewer than the parameters or do not determine them all (no other
    /// figure depends on one of them).
    pub leave_one_out: Option<f64>,
}

/// A fit's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// The model with the fitted parameters.
    #[serde(skip)]
    pub model: CostModel,
    /// Each fitted parameter, in the order asked.
    pub parameters: Vec<Fitted>,
    /// Each figure, in the order given.
    pub figures: Vec<Figure>,
}

/// Why a fit could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// A key names no number of the model.
    #[error(transparent)]
    Key(#[from] CostModelError),
    /// Fewer figures than parameters.
    #[error("{figures} measured times cannot fit {parameters} parameters: give at least as many times as parameters")]
    TooFew {
        /// Figures given.
        figures: usize,
        /// Parameters asked.
        parameters: usize,
    },
    /// The figures do not depend on a parameter (or on two only together).
    #[error(
        "the measured calls do not determine `{0}`: none of them depends on it apart from the other parameters \
         (fit it with calls that do, or leave it out)"
    )]
    Undetermined(String),
    /// A prediction was not positive, or a measured time was not.
    #[error("`{0}`: a time that is not positive (a measured time must be > 0 µs)")]
    NotPositive(String),
}

/// The iterations of Gauss-Newton: linear parameters converge in one or two.
const ITERATIONS: usize = 50;

/// `model` with `keys` fitted to `measured`.
///
/// # Errors
/// [`FitError`].
pub fn fit(model: &CostModel, keys: &[&str], measured: &[Measured<'_>]) -> Result<Fit, FitError> {
    let fitted = solve(model, keys, measured)?;
    let residuals = residuals(&fitted, measured)?;
    let (n, p) = (measured.len(), keys.len());
    let errors: Vec<Option<f64>> = if n > p {
        let spread = residuals.iter().map(|r| r * r).sum::<f64>() / (n - p) as f64;
        let inverse = inverse_normal(&jacobian(&fitted, keys, measured)?, keys)?;
        (0..p).map(|j| Some((spread * inverse[j][j]).max(0.0).sqrt())).collect()
    } else {
        vec![None; p]
    };
    let parameters = keys
        .iter()
        .zip(errors)
        .map(|(key, error)| Ok(Fitted { key: key.to_string(), value: fitted.get(key)?, error }))
        .collect::<Result<Vec<_>, FitError>>()?;
    let mut figures = Vec::with_capacity(n);
    for (i, figure) in measured.iter().enumerate() {
        let predicted = fitted.predict(figure.profile).seconds;
        let leave_one_out = if n > p {
            let others: Vec<Measured<'_>> =
                measured.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, m)| *m).collect();
            // The others may not determine every parameter (the one figure that
            // depends on HBM latency left out): then not known.
            solve(model, keys, &others).ok().map(|fitted| fitted.predict(figure.profile).seconds)
        } else {
            None
        };
        figures.push(Figure {
            name: figure.name.to_string(),
            measured: figure.seconds,
            predicted,
            residual: predicted / figure.seconds - 1.0,
            leave_one_out,
        });
    }
    Ok(Fit { model: fitted, parameters, figures })
}

/// `predicted / measured − 1` per figure.
fn residuals(model: &CostModel, measured: &[Measured<'_>]) -> Result<Vec<f64>, FitError> {
    measured
        .iter()
        .map(|m| {
            let predicted = model.predict(m.profile).seconds;
            if predicted > 0.0 && m.seconds > 0.0 {
                Ok(predicted / m.seconds - 1.0)
            } else {
                Err(FitError::NotPositive(m.name.to_string()))
            }
        })
        .collect()
}

/// The residuals' derivatives by each parameter: one row per figure.
fn jacobian(model: &CostModel, keys: &[&str], measured: &[Measured<'_>]) -> Result<Vec<Vec<f64>>, FitError> {
    let base = residuals(model, measured)?;
    let mut columns = Vec::with_capacity(keys.len());
    for key in keys {
        let value = model.get(key)?;
        let step = (value.abs() * 1e-4).max(1e-12);
        let moved = residuals(&model.with(key, value + step)?, measured)?;
        columns.push(moved.iter().zip(&base).map(|(m, b)| (m - b) / step).collect::<Vec<f64>>());
    }
    Ok((0..measured.len()).map(|i| columns.iter().map(|c| c[i]).collect()).collect())
}

/// `(JᵀJ)⁻¹`, computed with `J`'s columns scaled to unit length (the parameters differ
/// by many orders of magnitude: cycles and seconds), or which parameter the figures
/// cannot determine.
fn inverse_normal(jacobian: &[Vec<f64>], keys: &[&str]) -> Result<Vec<Vec<f64>>, FitError> {
    let p = keys.len();
    let norms: Vec<f64> = (0..p).map(|a| jacobian.iter().map(|row| row[a] * row[a]).sum::<f64>().sqrt()).collect();
    if let Some(a) = norms.iter().position(|&n| n == 0.0 || !n.is_finite()) {
        return Err(FitError::Undetermined(keys[a].to_string()));
    }
    let scaled: Vec<Vec<f64>> = (0..p)
        .map(|a| {
            (0..p).map(|b| jacobian.iter().map(|row| row[a] * row[b]).sum::<f64>() / (norms[a] * norms[b])).collect()
        })
        .collect();
    let inverse = invert(&scaled, keys)?;
    Ok((0..p).map(|a| (0..p).map(|b| inverse[a][b] / (norms[a] * norms[b])).collect()).collect())
}

/// The inverse of the square matrix `m` (Gauss-Jordan, partial pivoting; its diagonal
/// scaled to 1), or which parameter it cannot determine.
fn invert(m: &[Vec<f64>], keys: &[&str]) -> Result<Vec<Vec<f64>>, FitError> {
    let p = m.len();
    let mut a: Vec<Vec<f64>> = m
        .iter()
        .enumerate()
        .map(|(i, row)| row.iter().copied().chain((0..p).map(|j| f64::from(u8::from(i == j)))).collect())
        .collect();
    for col in 0..p {
        let pivot = (col..p).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs())).unwrap_or(col);
        // Unit diagonal: a pivot this small means two parameters move every figure alike.
        if a[pivot][col].abs() <= 1e-10 {
            return Err(FitError::Undetermined(keys[col].to_string()));
        }
        a.swap(col, pivot);
        let lead = a[col][col];
        a[col].iter_mut().for_each(|v| *v /= lead);
        for row in 0..p {
            if row != col {
                let factor = a[row][col];
                let pivot_row = a[col].clone();
                a[row].iter_mut().zip(pivot_row).for_each(|(v, c)| *v -= factor * c);
            }
        }
    }
    Ok(a.into_iter().map(|row| row[p..].to_vec()).collect())
}

/// The model with `keys` set by Gauss-Newton from `model`'s values.
fn solve(model: &CostModel, keys: &[&str], measured: &[Measured<'_>]) -> Result<CostModel, FitError> {
    if measured.len() < keys.len() {
        return Err(FitError::TooFew { figures: measured.len(), parameters: keys.len() });
    }
    let mut model = model.clone();
    for _ in 0..ITERATIONS {
        let r = residuals(&model, measured)?;
        let j = jacobian(&model, keys, measured)?;
        let inverse = inverse_normal(&j, keys)?;
        let gradient: Vec<f64> = (0..keys.len()).map(|a| j.iter().zip(&r).map(|(row, r)| row[a] * r).sum()).collect();
        let mut largest = 0.0f64;
        for (a, key) in keys.iter().enumerate() {
            let step: f64 = -(0..keys.len()).map(|b| inverse[a][b] * gradient[b]).sum::<f64>();
            let value = model.get(key)?;
            largest = largest.max((step / value.abs().max(1e-12)).abs());
            model = model.with(key, value + step)?;
        }
        if largest < 1e-12 {
            break;
        }
    }
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Accesses, CoreProfile, Region};
    use std::collections::BTreeMap;

    /// A one-core profile with `instructions` and `hbm` HBM loads.
    fn profile(instructions: u64, hbm: u64) -> Profile {
        let memory = BTreeMap::from([(Region::Hbm, Accesses { loads: hbm, stores: 0 })]);
        Profile { kernel: "k".into(), cores: vec![CoreProfile { instructions, memory, ..CoreProfile::default() }] }
    }

    #[test]
    fn a_fit_recovers_the_parameters_that_made_the_times() {
        let truth =
            CostModel::default().with("hbm.load_cycles", 300.0).unwrap().with("op.overhead_seconds", 2e-4).unwrap();
        // As far apart as the tutorial's designs: cycles and seconds many orders apart.
        let profiles =
            [profile(30_000_000, 65_536), profile(1_000_000, 1_000), profile(100_000, 0), profile(10_000, 20_000)];
        let names = ["a", "b", "c", "d"];
        let measured: Vec<Measured<'_>> = profiles
            .iter()
            .zip(names)
            .map(|(profile, name)| Measured { name, profile, seconds: truth.predict(profile).seconds })
            .collect();
        let keys = ["hbm.load_cycles", "op.overhead_seconds"];
        let fit = fit(&CostModel::default(), &keys, &measured).unwrap();
        assert!((fit.parameters[0].value - 300.0).abs() < 1e-6, "{:?}", fit.parameters);
        assert!((fit.parameters[1].value - 2e-4).abs() < 1e-12, "{:?}", fit.parameters);
        for figure in &fit.figures {
            assert!(figure.residual.abs() < 1e-9, "{figure:?}");
            let loo = figure.leave_one_out.expect("4 figures, 2 parameters");
            assert!((loo / figure.measured - 1.0).abs() < 1e-9, "exact data predicts itself: {figure:?}");
            assert!(fit.parameters.iter().all(|p| p.error.is_some_and(|e| e < 1e-6)), "{:?}", fit.parameters);
        }
        // Noise of ±1% gives back the parameters within their stated error, roughly.
        let noisy: Vec<Measured<'_>> = measured
            .iter()
            .enumerate()
            .map(|(i, m)| Measured { seconds: m.seconds * if i % 2 == 0 { 1.01 } else { 0.99 }, ..*m })
            .collect();
        let fit = super::fit(&CostModel::default(), &keys, &noisy).unwrap();
        let hbm = &fit.parameters[0];
        assert!((hbm.value - 300.0).abs() < 3.0 * hbm.error.unwrap() + 1.0, "{hbm:?}");
        assert!(fit.figures.iter().all(|f| f.residual.abs() < 0.02), "{:?}", fit.figures);
    }

    #[test]
    fn a_fit_says_what_it_cannot_determine() {
        let flat = profile(1000, 0);
        let measured = [
            Measured { name: "a", profile: &flat, seconds: 1e-6 },
            Measured { name: "b", profile: &flat, seconds: 2e-6 },
        ];
        let error = fit(&CostModel::default(), &["hbm.load_cycles"], &measured).unwrap_err();
        assert!(matches!(error, FitError::Undetermined(ref key) if key == "hbm.load_cycles"), "{error}");
        let error =
            fit(&CostModel::default(), &["hbm.load_cycles", "op.overhead_seconds"], &measured[..1]).unwrap_err();
        assert!(matches!(error, FitError::TooFew { figures: 1, parameters: 2 }), "{error}");
        let exact = fit(&CostModel::default(), &["op.overhead_seconds"], &measured[..1]).unwrap();
        assert_eq!((exact.parameters[0].error, exact.figures[0].leave_one_out), (None, None), "as many as parameters");
    }
}
