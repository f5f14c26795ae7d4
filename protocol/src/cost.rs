//! What a piece of JSON text costs the host to hold once it is parsed.
//!
//! Tool inputs arrive as JSON text and the host parses them (to validate them against
//! the tool's schema and hand them to the tool). Parsed JSON is larger than its text:
//! `[0,0,0,…]` is two bytes per value as text and tens of bytes per value as a
//! `serde_json::Value`. A budget counted in text bytes alone would let a 32 MiB input
//! become half a gigabyte in the host. [`json_cost`] counts the text plus a fixed
//! charge per value, found by one pass over the bytes without parsing, so the worker
//! and the host can both refuse an input before anyone allocates for it.

/// What the host charges per JSON value on top of its text: the size of a parsed value
/// plus the container slot that holds it, rounded up.
pub const COST_PER_VALUE: u64 = 64;

/// The bytes of `text` plus [`COST_PER_VALUE`] for every value it holds (an upper bound
/// on what holding it parsed takes). Works on any text: invalid JSON costs at least its
/// length, and the parser refuses it later anyway.
pub fn json_cost(text: &str) -> u64 {
    let bytes = text.as_bytes();
    // Every value is either the document itself or follows a `[`, a `,` or a `:`
    // outside strings; counting those bounds the number of values (object keys
    // included, since a `{` or `,` precedes each).
    let mut values: u64 = 1;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' | b',' | b':' => values += 1,
            _ => {}
        }
    }
    (bytes.len() as u64).saturating_add(values.saturating_mul(COST_PER_VALUE))
}

/// Formats a byte count as MiB with one decimal (`70.0 MiB`), for messages.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_costs_its_length_plus_a_charge_per_value() {
        assert_eq!(json_cost("\"hello\""), 7 + COST_PER_VALUE);
        assert_eq!(json_cost("[1,2,3]"), 7 + 4 * COST_PER_VALUE);
        assert_eq!(json_cost(r#"{"a":1,"b":[true]}"#), 18 + 6 * COST_PER_VALUE);
    }

    #[test]
    fn structure_inside_strings_is_not_counted() {
        assert_eq!(json_cost(r#""[,,,:{""#), 8 + COST_PER_VALUE);
        assert_eq!(json_cost(r#""a\"[,]""#), 8 + COST_PER_VALUE);
        assert_eq!(json_cost(r#"["\\",1]"#), 8 + 3 * COST_PER_VALUE);
    }

    #[test]
    fn many_small_values_cost_far_more_than_their_text() {
        let text = format!("[{}0]", "0,".repeat(1000));
        assert!(json_cost(&text) > 30 * text.len() as u64);
    }

    #[test]
    fn mib_has_one_decimal() {
        assert_eq!(mib(70 * 1024 * 1024), "70.0 MiB");
        assert_eq!(mib(1536 * 1024), "1.5 MiB");
    }
}
