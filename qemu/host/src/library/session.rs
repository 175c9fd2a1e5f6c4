//! The booted devices a library keeps: one session per core count, counting mode,
//! checks, profile, target and sanitizer. The first call of each boots QEMU (or starts
//! the host tier's loader) and enters the library; later calls only dispatch.

use super::{CallError, Library, Options, Sanitizer, Target};
use neuroncustomop_hosttier::HostLibrary;
use neuroncustomop_machine::device::{Report, Session, SessionOptions};
use neuroncustomop_machine::job::Job;
use std::collections::btree_map::Entry;
use std::sync::PoisonError;

/// What a session serves: its cores, its counting mode, whether it checks and profiles,
/// its target and sanitizer.
pub(super) type SessionKey = (usize, bool, bool, bool, Target, Option<Sanitizer>);

impl Library {
    /// Runs `job` on the session of `options` (booted, or built and started, on first use).
    pub(super) fn dispatch(
        &self,
        job: &Job,
        options: &Options,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Report, CallError> {
        let report = {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let sanitize = options.sanitize.filter(|_| options.target == Target::Host);
            // The checks and the profile run in the plugin, which runs without -icount.
            let count_instructions = options.count_instructions && !options.checked && !options.profile;
            let key = (options.cores, count_instructions, options.checked, options.profile, options.target, sanitize);
            let session = match sessions.entry(key) {
                Entry::Occupied(session) => session.into_mut(),
                Entry::Vacant(slot) if options.target == Target::Host => {
                    let host = self.host_library(sanitize)?;
                    slot.insert(neuroncustomop_hosttier::session(&host, options.cores).map_err(CallError::Host)?)
                }
                Entry::Vacant(slot) => {
                    let session_options = SessionOptions {
                        count_instructions,
                        checked: options.checked,
                        profile: options.profile,
                        ..SessionOptions::default()
                    };
                    slot.insert(
                        Session::boot(&self.package()?.images, options.cores, session_options)
                            .map_err(CallError::Run)?,
                    )
                }
            };
            let report = session.dispatch_cancellable(job, cancelled).map_err(CallError::Run)?;
            if options.target == Target::Host
                && report.outcome.stderr.contains(neuroncustomop_hosttier::loader::SESSION_ENDS)
            {
                // The host tier's loader ends its session when a kernel leaves without
                // returning (stops, or ends its op with `exit`): the core's thread is
                // parked where it stopped, and the next call starts anew.
                sessions.remove(&key);
            }
            report
        };
        Ok(report)
    }

    /// The host tier's build of this library with `sanitizer`, made once.
    pub(super) fn host_library(&self, sanitizer: Option<Sanitizer>) -> Result<HostLibrary, CallError> {
        let mut built = self.host.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(host) = built.get(&sanitizer) {
            return Ok(host.clone());
        }
        let project = self.project.as_ref().ok_or_else(|| {
            CallError::Host(neuroncustomop_hosttier::HostError::Unsupported(format!(
                "{} was loaded from a package: the host tier builds from the project's sources (load the project folder)",
                self.name()
            )))
        })?;
        let host = neuroncustomop_hosttier::build(project, sanitizer).map_err(CallError::Host)?;
        built.insert(sanitizer, host.clone());
        Ok(host)
    }
}
