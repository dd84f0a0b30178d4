//! Memory sizes as people type them: `16G`, `512M`, `4GiB`, `1.5G`, `65536` (bytes).

/// Parse a size into bytes. Suffixes K/M/G/T (optionally followed by `iB` or `B`) are powers
/// of 1024, case-insensitive; a bare number is bytes; a fractional number needs a suffix.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits_end);
    if num.is_empty() {
        return Err(format!("`{text}` is not a size: expected a number like 16G, 512M or 4GiB"));
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!("`{text}`: unknown unit `{other}` (use K, M, G or T, optionally with iB)"))
        }
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return Err(format!("`{text}` is not a number"));
    }
    let int: u64 =
        if int.is_empty() { 0 } else { int.parse().map_err(|_| format!("`{text}` is too large"))? };
    let whole = int
        .checked_shl(shift)
        .filter(|v| v >> shift == int)
        .ok_or_else(|| format!("`{text}` is too large"))?;
    if frac.is_empty() {
        return Ok(whole);
    }
    if shift == 0 {
        return Err(format!("`{text}`: a fraction of a byte makes no sense; add a unit"));
    }
    let frac_digits = &frac[..frac.len().min(9)];
    let frac_val: u64 = frac_digits.parse().map_err(|_| format!("`{text}` is not a number"))?;
    let scale = 10u64.pow(frac_digits.len() as u32);
    let extra = ((frac_val as u128) << shift) / scale as u128;
    whole.checked_add(extra as u64).ok_or_else(|| format!("`{text}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn accepts_the_usual_spellings() {
        assert_eq!(parse_size("16G"), Ok(16 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("4gib"), Ok(4 << 30));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
    }

    #[test]
    fn rejects_nonsense_with_a_reason() {
        for bad in ["", "G", "16X", "1.2.3G", "1.5", "99999999999T", "-1G"] {
            let err = parse_size(bad).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
    }
}
