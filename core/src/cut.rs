//! Cutting a program's output down to the byte cap the MCP server answers with.
//!
//! The server runs a program, then passes its result through [`cut_json`] (a JSON
//! value) or [`cut_text`] (text, console output) before it goes to the agent. What fits
//! the cap goes unchanged; what does not is shrunk and says so with markers that state
//! the cap, so the agent knows to ask for less (select fields, page, summarize).
//!
//! JSON is measured and written compact (`serde_json::to_string`): every byte of the
//! cap goes to data, none to indentation.
//!
//! The shrinking keeps the shape and stays valid JSON:
//! - a long string keeps its first characters and ends with `…[cut N chars]`;
//! - an array keeps its first items and ends with the item
//!   `"…[N more items cut: output cap is C bytes]"`;
//! - an object keeps its first keys and ends with the entry
//!   `"…": "[N more keys cut: output cap is C bytes]"`.
//!
//! Fairness, level by level: a container first decides how many children it keeps (its
//! first ones: as many as fit when each gets its full size or at least a floor, and
//! never less than its smallest cut form; the floor is 1/8 of the budget for an array's
//! items, so the kept ones are mostly whole, and 1/32 for an object's values, so most
//! keys stay), then shares its budget among them by water-filling: children smaller
//! than an equal share keep their full size and the rest split what remains equally.
//! So one huge field is cut to its share instead of starving its siblings, and each
//! kept child shrinks its own children the same way.

use std::io;

use serde_json::{Map, Value};

/// The smallest cap the shrinking works with; below it, an output that does not fit
/// becomes a lone marker string (which may be longer than such a cap).
pub const MIN_CAP: usize = 64;

/// A kept item gets at least this share of its array's budget (or its full size): a few
/// whole items show the agent the shape of all of them.
const ITEM_FLOOR_DIVISOR: usize = 8;

/// A kept value gets at least this share of its object's budget (or its full size): the
/// keys show the object's structure, so more of them are kept.
const VALUE_FLOOR_DIVISOR: usize = 32;

/// Nor less than this many bytes (or its full size).
const MIN_FLOOR: usize = 32;

/// An output as the agent gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The text: the whole output, or a shrunk one within the cap.
    pub text: String,
    /// True when something was left out.
    pub cut: bool,
}

/// `value` as compact JSON, shrunk to at most `cap_bytes` bytes when it is longer (see
/// the module docs). The text is always valid JSON; it is within the cap whenever the
/// cap is at least [`MIN_CAP`].
pub fn cut_json(value: &Value, cap_bytes: usize) -> Cut {
    let size = json_size_up_to(value, cap_bytes);
    if size <= cap_bytes {
        return Cut { text: value.to_string(), cut: false };
    }
    let whole =
        || Value::String(format!("…[{} bytes cut: output cap is {cap_bytes} bytes]", json_size(value))).to_string();
    if cap_bytes < MIN_CAP {
        return Cut { text: whole(), cut: true };
    }
    let text = Shrinker { cap: cap_bytes }.shrink(value, size, cap_bytes).to_string();
    // The shrinking counts exactly; this only guards the promise.
    Cut { text: if text.len() <= cap_bytes { text } else { whole() }, cut: true }
}

/// `text`, cut to at most `cap_bytes` bytes when it is longer: its head, cut at a
/// character boundary, then a line `…[cut: output cap is C bytes, N bytes omitted]`.
/// Below [`MIN_CAP`], a text that does not fit becomes the marker alone.
pub fn cut_text(text: &str, cap_bytes: usize) -> Cut {
    if text.len() <= cap_bytes {
        return Cut { text: text.to_string(), cut: false };
    }
    let marker = |omitted: usize| format!("…[cut: output cap is {cap_bytes} bytes, {omitted} bytes omitted]");
    // The marker for the whole length is the longest the real one can be.
    let room = cap_bytes.saturating_sub(marker(text.len()).len() + 1);
    if cap_bytes < MIN_CAP || room == 0 {
        return Cut { text: marker(text.len()), cut: true };
    }
    let end = (0..=room).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    let kept = &text[..end];
    let separator = if kept.is_empty() || kept.ends_with('\n') { "" } else { "\n" };
    Cut { text: format!("{kept}{separator}{}", marker(text.len() - end)), cut: true }
}

/// Shrinks values for one cap, which its markers state.
struct Shrinker {
    cap: usize,
}

impl Shrinker {
    /// `value` (of compact size `size`) shrunk to at most `budget` bytes; `budget` is at
    /// least [`Shrinker::min_size`] of it.
    fn shrink(&self, value: &Value, size: usize, budget: usize) -> Value {
        if size <= budget {
            return value.clone();
        }
        match value {
            Value::String(text) => Value::String(shrink_string(text, budget)),
            Value::Array(items) => self.shrink_array(items, budget),
            Value::Object(entries) => self.shrink_object(entries, budget),
            _ => value.clone(),
        }
    }

    /// The size of the smallest form [`Shrinker::shrink`] can give `value` (of size `size`).
    fn min_size(&self, value: &Value, size: usize) -> usize {
        let smallest = match value {
            Value::String(text) => 2 + string_suffix(text.chars().count()).len(),
            Value::Array(items) => 2 + json_size(&self.items_marker(items.len())),
            Value::Object(entries) => {
                2 + json_size(&Value::String(marker_key(entries))) + 1 + json_size(&self.keys_marker(entries.len()))
            }
            _ => size,
        };
        smallest.min(size)
    }

    fn items_marker(&self, more: usize) -> Value {
        Value::String(format!("…[{more} more items cut: output cap is {} bytes]", self.cap))
    }

    fn keys_marker(&self, more: usize) -> Value {
        Value::String(format!("[{more} more keys cut: output cap is {} bytes]", self.cap))
    }

    /// The first items that fit, each shrunk to its fair share, then the marker item.
    fn shrink_array(&self, items: &[Value], budget: usize) -> Value {
        let children = self.children(items.iter().map(|item| (0, item)), budget, budget / ITEM_FLOOR_DIVISOR);
        // `[` and `]`, a comma between items, and the marker item when some are left out.
        let overhead = |kept: usize| {
            if kept == items.len() {
                2 + kept.saturating_sub(1)
            } else {
                2 + kept + json_size(&self.items_marker(items.len() - kept))
            }
        };
        let (kept, shares) = keep_and_share(&children, items.len(), budget, overhead);
        let mut out: Vec<Value> = items
            .iter()
            .zip(&children)
            .zip(shares)
            .map(|((item, child), share)| self.shrink(item, child.size, share))
            .collect();
        if kept < items.len() {
            out.push(self.items_marker(items.len() - kept));
        }
        Value::Array(out)
    }

    /// The first entries that fit, each value shrunk to its fair share, then the marker
    /// entry.
    fn shrink_object(&self, entries: &Map<String, Value>, budget: usize) -> Value {
        // `"key":` before each value.
        let entries_with_keys = entries.iter().map(|(key, value)| (json_size(&Value::String(key.clone())) + 1, value));
        let children = self.children(entries_with_keys, budget, budget / VALUE_FLOOR_DIVISOR);
        let key = marker_key(entries);
        let marker_entry =
            |more: usize| json_size(&Value::String(key.clone())) + 1 + json_size(&self.keys_marker(more));
        let overhead = |kept: usize| {
            if kept == entries.len() {
                2 + kept.saturating_sub(1)
            } else {
                2 + kept + marker_entry(entries.len() - kept)
            }
        };
        let (kept, shares) = keep_and_share(&children, entries.len(), budget, overhead);
        let mut out: Map<String, Value> = entries
            .iter()
            .zip(&children)
            .zip(shares)
            .map(|(((key, value), child), share)| (key.clone(), self.shrink(value, child.size, share)))
            .collect();
        if kept < entries.len() {
            out.insert(key, self.keys_marker(entries.len() - kept));
        }
        Value::Object(out)
    }

    /// What a container with `budget` bytes needs to know of its first children
    /// (`fixed` key bytes and a value each), given its floor: up to the first child that
    /// cannot be kept even with every one before it at its least. Sizes are counted up
    /// to `budget + 1` only, so the work is bounded by the budget, not the value.
    fn children<'v>(
        &self,
        values: impl Iterator<Item = (usize, &'v Value)>,
        budget: usize,
        floor: usize,
    ) -> Vec<Child> {
        let mut children = Vec::new();
        let mut cost = 0usize;
        for (fixed, value) in values {
            let size = json_size_up_to(value, budget);
            let min = self.min_size(value, size);
            let child = Child { fixed, size, min, wanted: size.min(min.max(floor.max(MIN_FLOOR))) };
            cost = cost.saturating_add(child.fixed).saturating_add(child.wanted);
            children.push(child);
            if cost > budget {
                break;
            }
        }
        children
    }
}

/// One child of a container: its fixed bytes (an object key), its size (exact up to the
/// container's budget), the size of its smallest cut form, and what it gets at least
/// when kept.
struct Child {
    fixed: usize,
    size: usize,
    min: usize,
    wanted: usize,
}

/// How many of the container's `total` children to keep within `budget` (given its
/// `overhead` for that many; `children` are the first ones), and the budget of each kept
/// child's value: water-filling, so small children keep their size and big ones share
/// the rest equally.
fn keep_and_share(
    children: &[Child],
    total: usize,
    budget: usize,
    overhead: impl Fn(usize) -> usize,
) -> (usize, Vec<usize>) {
    let cost = |kept: &[Child]| kept.iter().fold(0usize, |sum, c| sum.saturating_add(c.fixed).saturating_add(c.wanted));
    let kept = if children.len() == total && overhead(total).saturating_add(cost(children)) <= budget {
        total
    } else {
        // The first `kept` fit with the marker; keeping none always does (the budget is
        // at least the container's smallest form).
        let mut kept = 0;
        let mut sum = 0usize;
        while kept < children.len() && kept + 1 < total {
            let next = sum.saturating_add(children[kept].fixed).saturating_add(children[kept].wanted);
            if overhead(kept + 1).saturating_add(next) > budget {
                break;
            }
            sum = next;
            kept += 1;
        }
        kept
    };
    let children = &children[..kept];
    let fixed: usize = children.iter().map(|c| c.fixed).sum();
    let room = budget.saturating_sub(overhead(kept)).saturating_sub(fixed);
    let given = |level: usize| children.iter().fold(0usize, |sum, c| sum.saturating_add(c.size.min(c.min.max(level))));
    // The highest level every kept child can have (at least its smallest form).
    let (mut low, mut high) = (0, children.iter().map(|c| c.size).max().unwrap_or(0));
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if given(middle) <= room {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    let mut spare = room.saturating_sub(given(low));
    let shares = children
        .iter()
        .map(|c| {
            let share = c.size.min(c.min.max(low));
            if share < c.size && spare > 0 {
                spare -= 1;
                share + 1
            } else {
                share
            }
        })
        .collect();
    (kept, shares)
}

/// The first characters of `text` that fit in `budget` bytes of JSON with the suffix
/// `…[cut N chars]`; `budget` is at least the size of the suffix alone.
fn shrink_string(text: &str, budget: usize) -> String {
    let total = text.chars().count();
    let mut used = 2;
    let mut end = 0;
    for (kept, (index, c)) in text.char_indices().enumerate() {
        let next = used + escaped_len(c);
        if next + string_suffix(total - kept - 1).len() > budget {
            break;
        }
        used = next;
        end = index + c.len_utf8();
    }
    let kept = text[..end].chars().count();
    format!("{}{}", &text[..end], string_suffix(total - kept))
}

fn string_suffix(cut: usize) -> String {
    format!("…[cut {cut} chars]")
}

/// A key for the marker entry that the object does not have: `…`, or `……` and so on.
fn marker_key(entries: &Map<String, Value>) -> String {
    let mut key = "…".to_string();
    while entries.contains_key(&key) {
        key.push('…');
    }
    key
}

/// The bytes of `c` inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The length of `value` as compact JSON, without writing it out.
fn json_size(value: &Value) -> usize {
    json_size_up_to(value, usize::MAX)
}

/// The length of `value` as compact JSON when it is at most `limit`; else some length
/// above `limit`, found without going through the rest of the value.
fn json_size_up_to(value: &Value, limit: usize) -> usize {
    struct Counter {
        count: usize,
        limit: usize,
    }
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.count = self.count.saturating_add(buf.len());
            if self.count > self.limit {
                return Err(io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { count: 0, limit };
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.count,
        Err(_) => counter.count.max(limit.saturating_add(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_fits_is_untouched() {
        let value = json!({ "a": [1, 2.5, "é\n"], "b": null });
        assert_eq!(cut_json(&value, 100), Cut { text: r#"{"a":[1,2.5,"é\n"],"b":null}"#.into(), cut: false });
        let exact = value.to_string().len();
        assert_eq!(cut_json(&value, exact), Cut { text: value.to_string(), cut: false });
        assert!(cut_json(&value, exact - 1).cut);
        assert_eq!(cut_text("short", 5), Cut { text: "short".into(), cut: false });
    }

    #[test]
    fn a_long_string_keeps_its_head() {
        let text = "abcdefghij".repeat(10);
        let cut = cut_json(&json!(text), 64);
        assert_eq!(cut.text, format!("\"{}…[cut 55 chars]\"", &text[..45]));
        assert_eq!(cut.text.len(), 64);
        assert!(cut.cut);
    }

    #[test]
    fn an_array_keeps_its_first_items_and_says_how_many_went() {
        let items: Vec<u32> = (1000..1020).collect();
        assert_eq!(cut_json(&json!(items), 64).text, r#"[1000,1001,"…[18 more items cut: output cap is 64 bytes]"]"#);
    }

    #[test]
    fn an_object_keeps_its_first_keys_and_says_how_many_went() {
        let value: Value = (0..20).map(|i| (format!("k{i}"), json!(i))).collect::<Map<String, Value>>().into();
        assert_eq!(
            cut_json(&value, 80).text,
            r#"{"k0":0,"k1":1,"k2":2,"k3":3,"…":"[16 more keys cut: output cap is 80 bytes]"}"#
        );
        // The marker entry takes a key the object does not have.
        let value = json!({ "…": "a", "b": "x".repeat(200), "c": [1, 2, 3], "d": "y".repeat(200) });
        let cut = cut_json(&value, 100);
        let parsed: Value = serde_json::from_str(&cut.text).unwrap();
        assert_eq!(parsed["…"], "a");
        assert!(cut.text.len() <= 100, "{}", cut.text);
    }

    #[test]
    fn a_huge_field_does_not_starve_its_siblings() {
        let value = json!({ "a": "x".repeat(1000), "b": "y".repeat(1000), "c": 1 });
        let expected =
            format!(r#"{{"a":"{}…[cut 928 chars]","b":"{}…[cut 929 chars]","c":1}}"#, "x".repeat(72), "y".repeat(71));
        assert_eq!(cut_json(&value, 200).text, expected);
        assert_eq!(expected.len(), 200);

        let value = json!({ "big": "z".repeat(100_000), "name": "short", "list": [1, 2, 3], "nested": { "deep": "x".repeat(50_000), "ok": true } });
        let parsed: Value = serde_json::from_str(&cut_json(&value, 1000).text).unwrap();
        assert_eq!(
            (parsed["name"].clone(), parsed["list"].clone(), parsed["nested"]["ok"].clone()),
            (json!("short"), json!([1, 2, 3]), json!(true))
        );
        let big = parsed["big"].as_str().unwrap();
        let deep = parsed["nested"]["deep"].as_str().unwrap();
        assert!(big.len() > 300 && deep.len() > 300, "{big} / {deep}");
    }

    #[test]
    fn an_array_of_records_keeps_whole_records() {
        let records: Vec<Value> =
            (0..1000).map(|i| json!({ "id": i, "name": format!("record number {i}"), "tags": ["a", "b"] })).collect();
        let cut = cut_json(&json!(records), 2000);
        let parsed: Vec<Value> = serde_json::from_str(&cut.text).unwrap();
        let (marker, kept) = parsed.split_last().unwrap();
        assert_eq!(kept, &records[..kept.len()]);
        assert!(kept.len() >= 20, "{}", kept.len());
        assert_eq!(marker, &json!(format!("…[{} more items cut: output cap is 2000 bytes]", 1000 - kept.len())));
    }

    #[test]
    fn below_the_minimum_cap_a_marker_alone() {
        assert_eq!(
            cut_json(&json!("x".repeat(100)), 10),
            Cut { text: r#""…[102 bytes cut: output cap is 10 bytes]""#.into(), cut: true }
        );
        assert_eq!(
            cut_text(&"x".repeat(100), 10),
            Cut { text: "…[cut: output cap is 10 bytes, 100 bytes omitted]".into(), cut: true }
        );
    }

    #[test]
    fn text_keeps_its_head_and_a_marker_line() {
        let text = "0123456789".repeat(10);
        assert_eq!(
            cut_text(&text, 64),
            Cut { text: "012345678901\n…[cut: output cap is 64 bytes, 88 bytes omitted]".into(), cut: true }
        );
        // Cut at a character boundary; no blank line when the head ends a line.
        let cut = cut_text(&format!("{}\n{}", "é".repeat(6), "😀".repeat(30)), 64);
        assert_eq!(cut.text, "éééééé\n…[cut: output cap is 64 bytes, 121 bytes omitted]");
    }

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self, below: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % below
        }

        fn string(&mut self, max: u64) -> String {
            const CHARS: [char; 12] = ['a', 'b', ' ', 'é', '😀', '"', '\\', '\n', '\u{1}', '…', '/', '中'];
            (0..self.next(max + 1)).map(|_| CHARS[self.next(CHARS.len() as u64) as usize]).collect()
        }

        fn value(&mut self, depth: u32) -> Value {
            match self.next(if depth > 3 { 5 } else { 8 }) {
                0 => Value::Null,
                1 => json!(self.next(2) == 0),
                2 => json!(self.next(1_000_000) as i64 - 500_000),
                3 => json!(self.next(1000) as f64 / 7.0),
                4 => {
                    let max = if self.next(4) == 0 { 2000 } else { 30 };
                    json!(self.string(max))
                }
                5 | 6 => Value::Array((0..self.next(16)).map(|_| self.value(depth + 1)).collect()),
                _ => Value::Object((0..self.next(10)).map(|_| (self.string(8), self.value(depth + 1))).collect()),
            }
        }
    }

    /// True when `out` is `original` cut as the module docs say.
    fn is_cut_of(out: &Value, original: &Value, cap: usize) -> bool {
        match (out, original) {
            (Value::String(out), Value::String(original)) => {
                out == original
                    || out.rsplit_once("…[cut ").is_some_and(|(head, tail)| {
                        original.starts_with(head)
                            && tail == format!("{} chars]", original.chars().count() - head.chars().count())
                    })
            }
            (Value::Array(out), Value::Array(original)) => {
                let marker = format!("…[{} more items cut: output cap is {cap} bytes]", original.len() + 1 - out.len());
                let (kept, last) = match out.split_last() {
                    Some((Value::String(last), kept)) if *last == marker => (kept, true),
                    _ => (&out[..], false),
                };
                (last || kept.len() == original.len()) && kept.iter().zip(original).all(|(o, v)| is_cut_of(o, v, cap))
            }
            (Value::Object(out), Value::Object(original)) => {
                let marker = format!("[{} more keys cut: output cap is {cap} bytes]", original.len() + 1 - out.len());
                let marker_key = marker_key(original);
                let has_marker = out.get(&marker_key) == Some(&Value::String(marker));
                let kept = out.len() - usize::from(has_marker);
                (has_marker || kept == original.len())
                    && out.iter().take(kept).zip(original).all(|((ok, ov), (k, v))| ok == k && is_cut_of(ov, v, cap))
            }
            _ => out == original,
        }
    }

    #[test]
    fn generated_values_are_cut_to_valid_json_within_the_cap() {
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let mut cut_count = 0;
        for _ in 0..400 {
            let value = rng.value(0);
            let full = value.to_string();
            for cap in [0, 10, 63, 64, 65, 70, 100, 128, 200, 333, 512, 1000, 4096, 20_000] {
                let cut = cut_json(&value, cap);
                let parsed: Value = serde_json::from_str(&cut.text)
                    .unwrap_or_else(|e| panic!("not JSON ({e}) at cap {cap}: {}", cut.text));
                if full.len() <= cap {
                    assert_eq!(cut, Cut { text: full.clone(), cut: false });
                    continue;
                }
                cut_count += 1;
                assert!(cut.cut);
                if cap >= MIN_CAP {
                    assert!(cut.text.len() <= cap, "{} bytes over a cap of {cap}: {}", cut.text.len(), cut.text);
                    assert!(is_cut_of(&parsed, &value, cap), "at cap {cap}: {} is not a cut of {full}", cut.text);
                } else {
                    assert_eq!(parsed, json!(format!("…[{} bytes cut: output cap is {cap} bytes]", full.len())));
                }
            }
        }
        assert!(cut_count > 1000, "{cut_count}");
    }

    #[test]
    fn generated_texts_are_cut_within_the_cap() {
        let mut rng = Rng(0x0dd_ba11);
        for _ in 0..500 {
            let text = rng.string(3000);
            for cap in [64, 65, 100, 257, 1000] {
                let cut = cut_text(&text, cap);
                if text.len() <= cap {
                    assert_eq!(cut.text, text);
                    continue;
                }
                assert!(cut.text.len() <= cap, "{} > {cap}", cut.text.len());
                let omitted: usize = cut
                    .text
                    .rsplit_once(" bytes, ")
                    .unwrap()
                    .1
                    .strip_suffix(" bytes omitted]")
                    .unwrap()
                    .parse()
                    .unwrap();
                let kept = &text[..text.len() - omitted];
                let separator = if kept.is_empty() || kept.ends_with('\n') { "" } else { "\n" };
                assert_eq!(
                    cut.text,
                    format!("{kept}{separator}…[cut: output cap is {cap} bytes, {omitted} bytes omitted]")
                );
                assert!(kept.len() + 70 >= cap, "keeps what it can: {} of {cap}", kept.len());
            }
        }
    }

    #[test]
    fn escaped_lengths_match_serde_json() {
        for c in [
            'a', 'é', '😀', '"', '\\', '\n', '\r', '\t', '\u{8}', '\u{c}', '\u{0}', '\u{1f}', '\u{7f}', '/', '\u{2028}',
        ] {
            assert_eq!(escaped_len(c) + 2, Value::String(c.to_string()).to_string().len(), "{c:?}");
        }
    }
}
