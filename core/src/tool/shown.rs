//! What a person is shown when a tool call needs their approval: the whole input, or
//! every field of it with the long ones shortened in place (each cut says how much it
//! left out), and no character that could hide or reorder what is shown.
//!
//! Both ways of asking use it: MCP elicitation (`serve::approvals`) and the terminal
//! (`terminal_approvals`). A padded value cannot push a field out of view (the
//! shortening is [`crate::cut::cut_json`]'s, which shares the room between all
//! fields); an input with more fields or items than can be shown is not shown shortened
//! but refused ([`input_for_person`]: nobody is asked to approve what they cannot
//! see); and bidirectional overrides, zero-width and other invisible characters are
//! shown as `\u202E`-style escapes, so "txt.exe" cannot pass for "exe.txt".

use serde_json::Value;

use crate::cut::cut_json;

/// How much of an input a question shows, in bytes of JSON.
pub const INPUT_SHOWN_BYTES: usize = 8 * 1024;

/// `input` as a person reads it in an approval question: pretty JSON, whole when it
/// fits [`INPUT_SHOWN_BYTES`], otherwise with long strings shortened in place and a
/// first line saying so; invisible characters escaped ([`visible`]). `Err` (the reason
/// to refuse the call without asking) when even shortened strings leave no room for
/// every field and item: what would be hidden could be what matters.
pub fn input_for_person(input: &Value) -> Result<String, String> {
    let cut = cut_json(input, INPUT_SHOWN_BYTES);
    let (value, note) = if cut.cut {
        if cut.text.contains("more keys cut: output cap is") || cut.text.contains("more items cut: output cap is") {
            return Err(format!(
                "its input has more fields or items than a person can be shown ({} of JSON); codemode does not ask anyone to approve what they cannot see: send less in one call",
                crate::limits::human_bytes(serde_json::to_string(input).map_or(0, |t| t.len()) as u64)
            ));
        }
        let shortened = serde_json::from_str::<Value>(&cut.text).unwrap_or(Value::String(cut.text));
        (shortened, "(the input is long: every field is shown, long values shortened where marked …[cut])\n")
    } else {
        (input.clone(), "")
    };
    Ok(visible(&format!("{note}{}", serde_json::to_string_pretty(&value).unwrap_or_default())))
}

/// `text` with every character that could hide, reorder or rewrite what a person sees
/// shown as an escape (`\u202E`): control characters other than newlines and tabs,
/// bidirectional marks, embeddings, overrides and isolates, zero-width and other
/// invisible formatting characters, and Unicode tags.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hiding(c) {
            out.push_str(&format!("\\u{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// True for a character that is not shown as itself (see [`visible`]).
fn is_hiding(c: char) -> bool {
    if c == '\n' || c == '\t' {
        return false;
    }
    c.is_control()
        || matches!(
            u32::from(c),
            0x00AD          // soft hyphen
            | 0x034F        // combining grapheme joiner
            | 0x061C        // Arabic letter mark
            | 0x115F | 0x1160 | 0x3164 | 0xFFA0 // Hangul fillers
            | 0x17B4 | 0x17B5 // Khmer inherent vowels
            | 0x180B..=0x180F // Mongolian variation selectors and vowel separator
            | 0x200B..=0x200F // zero-width space, joiners, LRM, RLM
            | 0x2028..=0x202E // line and paragraph separators, embeddings, overrides
            | 0x2060..=0x206F // word joiner, invisible operators, isolates, deprecated
            | 0xFE00..=0xFE0F // variation selectors
            | 0xFEFF        // zero-width no-break space (BOM)
            | 0xFFF9..=0xFFFB // interlinear annotations
            | 0x1BCA0..=0x1BCA3 // shorthand format controls
            | 0x1D173..=0x1D17A // musical format controls
            | 0xE0000..=0xE0FFF // tags and variation selectors supplement
        )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn invisible_and_reordering_characters_are_escaped() {
        assert_eq!(visible("safe\u{202E}txt.exe"), "safe\\u202Etxt.exe");
        assert_eq!(visible("a\u{200B}b\u{2066}c\u{FEFF}\u{E0041}"), "a\\u200Bb\\u2066c\\uFEFF\\uE0041");
        assert_eq!(visible("bell\u{7}\u{1b}[2J"), "bell\\u0007\\u001B[2J");
        assert_eq!(visible("line one\n\tline two é 日本"), "line one\n\tline two é 日本");
    }

    #[test]
    fn a_padded_input_still_shows_every_field() {
        let input = json!({ "pad": "x".repeat(20_000), "command": "rm -rf /srv/data", "note": "safe\u{202E}txt.exe" });
        let shown = input_for_person(&input).unwrap();
        assert!(shown.len() < INPUT_SHOWN_BYTES + 512, "{}", shown.len());
        assert!(shown.starts_with("(the input is long"), "{shown}");
        assert!(shown.contains("\"command\": \"rm -rf /srv/data\""), "{shown}");
        assert!(shown.contains("safe\\u202Etxt.exe"), "{shown}");
        assert!(shown.contains("…[cut"), "the shortened value says so: {shown}");
        let small = json!({ "a": 1 });
        assert_eq!(input_for_person(&small).unwrap(), "{\n  \"a\": 1\n}");
        // A thousand small fields before the one that matters: nothing is hidden, so
        // nobody is asked.
        let mut padded = serde_json::Map::new();
        for i in 0..1000 {
            padded.insert(format!("pad{i}"), json!("x"));
        }
        padded.insert("command".into(), json!("rm -rf /srv/data"));
        let refused = input_for_person(&Value::Object(padded)).unwrap_err();
        assert!(refused.starts_with("its input has more fields or items than a person can be shown"), "{refused}");
        let long_list = json!({ "paths": (0..5000).map(|i| format!("/srv/{i}")).collect::<Vec<_>>() });
        assert!(input_for_person(&long_list).is_err());
    }
}
