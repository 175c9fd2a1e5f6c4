//! The exact decimal expansion of a double, digit by digit, and C's rounding of it:
//! to nearest, ties to even, on the exact value (not on a 17-digit approximation, which
//! rounds twice: `%.1f` of 0.95, whose double is 0.9499999…, must print `0.9`).
//!
//! A double is `m × 2^e` with `m < 2^53`: its integer part has at most 309 decimal
//! digits and its fraction at most 1,074, all finite. [`Digits`] holds the integer part
//! in base 10^4 and the fraction as a binary numerator over `2^bits`; each fraction digit
//! is one multiplication of that numerator by 10 (its digits end when it reaches 0).
//! The cost grows with the value's distance from 1: a few words for ordinary values,
//! 35 for `1e-300`.

/// Digits per chunk of the integer part: 10^4 keeps the conversion's long division in
/// 32-bit arithmetic (a 16-bit half-word at a time), which the cores divide in hardware;
/// 10^9 would need 64-bit divisions, a library call each.
const CHUNK_DIGITS: u32 = 4;
/// 10^[`CHUNK_DIGITS`].
const CHUNK: u32 = 10_000;
/// Chunks that hold the largest integer part, 2^1024 (309 digits).
const INT_CHUNKS: usize = 78;
/// Words of the fraction's numerator: 1,074 bits, times 10 (4 more bits), and one spare
/// word for the digit that straddles two words.
const FRAC_WORDS: usize = 36;
const POWERS_OF_TEN: [u32; 5] = [1, 10, 100, 1_000, 10_000];

/// The decimal digits of a finite, non-negative double, from its first integer digit
/// (or, when the integer part is 0, its first fraction digit) on; zeros after its last.
#[derive(Clone)]
pub(super) struct Digits {
    /// The integer part in base 10^4, least significant chunk first.
    int: [u32; INT_CHUNKS],
    /// How many decimal digits the integer part has (0 when it is 0).
    int_digits: u32,
    /// The fraction's numerator over `2^frac_bits`, least significant word first.
    frac: [u32; FRAC_WORDS],
    frac_bits: u32,
    /// Digits handed out so far.
    position: u32,
    /// A digit [`skip_leading_zeros`](Self::skip_leading_zeros) read and kept.
    pending: Option<u8>,
}

impl Digits {
    #[cfg_attr(target_os = "none", optimize(size))]
    pub(super) fn new(value: f64) -> Self {
        let bits = value.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1 << 52) - 1);
        let (mantissa, exponent) = if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) };
        let mut digits = Digits {
            int: [0; INT_CHUNKS],
            int_digits: 0,
            frac: [0; FRAC_WORDS],
            frac_bits: 0,
            position: 0,
            pending: None,
        };
        if exponent >= 0 {
            // m << e: at most 1,024 bits, in 32 words plus room for the shifted mantissa.
            let mut words = [0u32; 34];
            let (word, bit) = (exponent as usize / 32, exponent as u32 % 32);
            let shifted = u128::from(mantissa) << bit;
            for (i, slot) in words[word..word + 3].iter_mut().enumerate() {
                *slot = (shifted >> (32 * i)) as u32;
            }
            digits.set_integer(&mut words);
        } else {
            let shift = exponent.unsigned_abs();
            let (int, frac) =
                if shift >= 64 { (0, mantissa) } else { (mantissa >> shift, mantissa & ((1 << shift) - 1)) };
            digits.set_integer(&mut [int as u32, (int >> 32) as u32]);
            digits.frac[0] = frac as u32;
            digits.frac[1] = (frac >> 32) as u32;
            digits.frac_bits = shift;
        }
        digits
    }

    /// The integer part from binary `words` (least significant first; consumed).
    #[cfg_attr(target_os = "none", optimize(size))]
    fn set_integer(&mut self, words: &mut [u32]) {
        let mut chunks = 0;
        let mut top = words.len();
        loop {
            while top > 0 && words[top - 1] == 0 {
                top -= 1;
            }
            if top == 0 {
                break;
            }
            // words /= 10^4, the remainder is the next chunk: half-words, so that each
            // step divides a number below 10^4 * 2^16 < 2^30.
            let mut remainder = 0u32;
            for word in words[..top].iter_mut().rev() {
                let high = (remainder << 16) | (*word >> 16);
                let low = ((high % CHUNK) << 16) | (*word & 0xffff);
                *word = ((high / CHUNK) << 16) | (low / CHUNK);
                remainder = low % CHUNK;
            }
            self.int[chunks] = remainder;
            chunks += 1;
        }
        if chunks > 0 {
            let top_chunk = self.int[chunks - 1];
            let top_digits = POWERS_OF_TEN.iter().take_while(|&&p| p <= top_chunk).count() as u32;
            self.int_digits = (chunks as u32 - 1) * CHUNK_DIGITS + top_digits;
        }
    }

    /// How many digits the integer part has (0 when it is 0).
    pub(super) fn int_digits(&self) -> u32 {
        self.int_digits
    }

    /// For a value below 1 (and not 0): skips the fraction's zeros before its first
    /// significant digit, and returns how many there were.
    #[cfg_attr(target_os = "none", optimize(size))]
    pub(super) fn skip_leading_zeros(&mut self) -> u32 {
        if self.int_digits > 0 {
            return 0;
        }
        let mut zeros = 0;
        loop {
            let digit = self.next_digit();
            if digit != 0 || self.frac_is_zero() {
                self.pending = Some(digit);
                return zeros;
            }
            zeros += 1;
        }
    }

    /// The next digit.
    #[cfg_attr(target_os = "none", optimize(size))]
    pub(super) fn next_digit(&mut self) -> u8 {
        if let Some(digit) = self.pending.take() {
            return digit;
        }
        let position = self.position;
        self.position += 1;
        if position < self.int_digits {
            let from_right = self.int_digits - 1 - position;
            let (chunk, within) = (from_right / CHUNK_DIGITS, from_right % CHUNK_DIGITS);
            return (self.int[chunk as usize] / POWERS_OF_TEN[within as usize] % 10) as u8;
        }
        if self.frac_bits == 0 {
            return 0;
        }
        let (word, bit) = ((self.frac_bits / 32) as usize, self.frac_bits % 32);
        let mut carry = 0u64;
        for slot in &mut self.frac[..=word] {
            let product = u64::from(*slot) * 10 + carry;
            *slot = product as u32;
            carry = product >> 32;
        }
        self.frac[word + 1] = carry as u32;
        let above = u64::from(self.frac[word + 1]) << 32 | u64::from(self.frac[word]);
        let digit = (above >> bit) as u8;
        self.frac[word] &= ((1u64 << bit) - 1) as u32;
        self.frac[word + 1] = 0;
        digit
    }

    fn frac_is_zero(&self) -> bool {
        self.frac.iter().all(|&w| w == 0)
    }

    /// Whether any digit after those handed out is not 0.
    fn rest_is_nonzero(&self) -> bool {
        if self.position < self.int_digits {
            let below = self.int_digits - self.position;
            let chunk = (below / CHUNK_DIGITS) as usize;
            if self.int[..chunk].iter().any(|&c| c != 0) {
                return true;
            }
            if !self.int[chunk].is_multiple_of(POWERS_OF_TEN[(below % CHUNK_DIGITS) as usize]) {
                return true;
            }
        }
        !self.frac_is_zero()
    }
}

/// What rounding to `keep` digits does, found by reading them once: the digits are then
/// read again through [`Rounded::digits`].
pub(super) struct Rounded {
    keep: u32,
    round_up: bool,
    /// The last kept digit below 9: the one a carry stops at (`None`: all are 9).
    last_below_nine: Option<u32>,
    /// The last kept digit that is not 0, before rounding.
    last_nonzero: Option<u32>,
}

impl Rounded {
    /// Rounds the digits of `digits` to their first `keep`, to nearest, ties to even.
    #[cfg_attr(target_os = "none", optimize(size))]
    pub(super) fn new(mut digits: Digits, keep: u32) -> Self {
        let (mut last_below_nine, mut last_nonzero, mut last) = (None, None, 0);
        for index in 0..keep {
            let digit = digits.next_digit();
            if digit != 9 {
                last_below_nine = Some(index);
            }
            if digit != 0 {
                last_nonzero = Some(index);
            }
            last = digit;
        }
        let next = digits.next_digit();
        let round_up = next > 5 || (next == 5 && (digits.rest_is_nonzero() || last % 2 == 1));
        Rounded { keep, round_up, last_below_nine, last_nonzero }
    }

    /// Whether rounding carried out of every kept digit (9.96 to 2 digits: 10.0): the
    /// result then has one digit more, a 1 followed by zeros.
    pub(super) fn carried_out(&self) -> bool {
        self.round_up && self.last_below_nine.is_none()
    }

    /// How many digits the rounded result has: `keep`, plus one if it carried out.
    pub(super) fn len(&self) -> u32 {
        self.keep + u32::from(self.carried_out())
    }

    /// How many of the rounded result's digits remain once its trailing zeros are cut.
    pub(super) fn len_without_trailing_zeros(&self) -> u32 {
        match (self.round_up, self.last_below_nine) {
            (true, Some(index)) => index + 1,
            (true, None) => 1,
            (false, _) => self.last_nonzero.map_or(0, |index| index + 1),
        }
    }

    /// The rounded digits, as ASCII, from `digits` (a fresh copy of the expansion that
    /// was rounded).
    pub(super) fn digits(&self, digits: Digits) -> impl Iterator<Item = u8> {
        let carried = self.carried_out();
        let (round_up, last_below_nine) = (self.round_up, self.last_below_nine);
        let mut digits = digits;
        (0..self.len()).map(move |index| {
            if carried {
                return if index == 0 { b'1' } else { b'0' };
            }
            let digit = digits.next_digit();
            b'0' + match last_below_nine {
                Some(bump) if round_up && index == bump => digit + 1,
                Some(bump) if round_up && index > bump => 0,
                _ => digit,
            }
        })
    }
}
