//! Squid native `access.log` parsing, for replaying a real proxy's requests.
//!
//! A line is `time elapsed client code/status bytes method URL ident hierarchy type`,
//! e.g. `1286536308.779 1000 10.0.0.68 TCP_MISS/200 19763 GET http://a.b/c - DIRECT/1.2.3.4 text/html`.
//! Only the time, the client and the byte count are used; blank lines and lines starting
//! with `#` are skipped.

use smallpipe_core::ConfigError;

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Seconds since the log's first request.
    pub time_s: f64,
    pub client: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AccessLog {
    pub requests: Vec<Request>,
    /// Malformed lines skipped (only when asked to skip).
    pub skipped: u64,
}

/// Parses a log; a malformed line is an error naming its number, unless `skip_malformed`.
pub fn parse_access_log(text: &str, field: &str, skip_malformed: bool) -> Result<AccessLog, ConfigError> {
    let mut requests = Vec::new();
    let mut skipped = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Ok(r) => requests.push(r),
            Err(why) if skip_malformed => {
                let _ = why;
                skipped += 1;
            }
            Err(why) => {
                return Err(ConfigError::new(
                    field,
                    format!("line {}: {why}", i + 1),
                    "Squid native access.log lines: time (seconds >= 0) elapsed client code/status bytes (a whole number) method URL ... (or set skip_malformed = true)",
                ))
            }
        }
    }
    if requests.is_empty() {
        return Err(ConfigError::new(field, "a log without requests", "at least one well-formed line"));
    }
    requests.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    let t0 = requests[0].time_s;
    for r in &mut requests {
        r.time_s -= t0;
    }
    Ok(AccessLog { requests, skipped })
}

fn parse_line(line: &str) -> Result<Request, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 7 {
        let shown: String = line.chars().take(60).collect();
        return Err(format!("{shown:?} ({} fields)", fields.len()));
    }
    // `parse` takes "nan" and "inf": only a finite time is one.
    let time_s: f64 = fields[0].parse().ok().filter(|t: &f64| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| format!("time {:?}", fields[0]))?;
    if !fields[3].contains('/') {
        return Err(format!("result {:?}", fields[3]));
    }
    let bytes: u64 = fields[4].parse().map_err(|_| format!("bytes {:?}", fields[4]))?;
    Ok(Request { time_s, client: fields[2].to_string(), bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
1286536309.000 10 10.0.0.2 TCP_MISS/200 5000 GET http://x/b - DIRECT/1.2.3.4 image/png
# a comment
1286536308.500 20 10.0.0.1 TCP_MISS/200 19763 GET http://x/a - DIRECT/1.2.3.4 text/html

1286536310.250 5 10.0.0.1 TCP_HIT/200 120 GET http://x/c - NONE/- text/css
";

    #[test]
    fn parses_sorts_and_rebases_time() {
        let log = parse_access_log(LOG, "log_path", false).unwrap();
        assert_eq!(log.requests.len(), 3);
        assert_eq!(log.requests[0], Request { time_s: 0.0, client: "10.0.0.1".into(), bytes: 19763 });
        assert!((log.requests[1].time_s - 0.5).abs() < 1e-9);
        assert!((log.requests[2].time_s - 1.75).abs() < 1e-9);
    }

    #[test]
    fn malformed_line_is_named_or_skipped_and_counted() {
        let bad = format!("{LOG}1286536311.0 5 10.0.0.3 TCP_MISS/200 lots GET http://x/d - DIRECT/- -\n");
        let e = parse_access_log(&bad, "flows[0].log_path", false).unwrap_err();
        assert_eq!(e.field, "flows[0].log_path");
        assert!(e.value.starts_with("line 6:"), "{e}");
        assert!(e.value.contains("lots"), "{e}");
        let log = parse_access_log(&bad, "log_path", true).unwrap();
        assert_eq!((log.requests.len(), log.skipped), (3, 1));
    }

    #[test]
    fn nan_infinite_and_garbage_lines_are_malformed() {
        for (line, shown) in [("nan 5 10.0.0.3 TCP_MISS/200 9 GET http://x/d", "time \"nan\""),
                              ("inf 5 10.0.0.3 TCP_MISS/200 9 GET http://x/d", "time \"inf\""),
                              ("\u{1}\u{2} garbage", "\"\\u{1}\\u{2} garbage\" (2 fields)")] {
            let e = parse_access_log(&format!("{LOG}{line}\n"), "log_path", false).unwrap_err();
            assert_eq!(e.value, format!("line 6: {shown}"), "{e}");
        }
    }
}
