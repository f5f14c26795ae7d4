//! How deeply brackets nest in a JavaScript or TypeScript text, found by one linear scan
//! (no parse), so that text nested deeper than a parser's recursion can take is refused
//! (or handed to the engine, which checks its own stack) before a recursive parser meets
//! it. Brackets inside strings, template texts and comments are not counted; a regular
//! expression's are (telling one from a division needs a parse), which can only make the
//! count higher than the truth, never lower.

/// The deepest nesting a text may have before it is kept from swc's parser: far more
/// than anything people write, far less than what overflows a thread's stack.
pub const MAX_NESTING: usize = 500;

/// The deepest nesting of `(`, `[`, `{` (and `${` in templates) in `text`.
pub fn deepest(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    // Open template literals, by the brace depth at which each `${` opened.
    let mut templates: Vec<usize> = Vec::new();
    let mut i = 0;
    let mut in_template = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_template {
            match c {
                b'\\' => i += 1,
                b'`' => in_template = false,
                b'$' if bytes.get(i + 1) == Some(&b'{') => {
                    templates.push(depth);
                    depth += 1;
                    deepest = deepest.max(depth);
                    in_template = false;
                    i += 1;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' | b'\'' => {
                i += 1;
                while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => in_template = true,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if c == b'}' && templates.last() == Some(&depth) {
                    templates.pop();
                    in_template = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// True when `text` nests deeper than [`MAX_NESTING`].
pub fn too_deep(text: &str) -> bool {
    deepest(text) > MAX_NESTING
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_brackets_outside_strings_templates_and_comments() {
        assert_eq!(deepest("f(a[0], { b: [1, 2] })"), 3);
        assert_eq!(deepest("const s = '((((('; // ((((\n/* [[[[ */ x"), 0);
        assert_eq!(deepest("`a ${ b({ c: `d ${ [e] }` }) } f` + (g)"), 5);
        assert_eq!(deepest(r#"const s = "\"(((\"";"#), 0);
        assert_eq!(deepest("))) (("), 2, "stray closers never go below zero");
    }

    #[test]
    fn deep_text_is_told() {
        let deep = format!("return {}1{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(deepest(&deep), 5000);
        assert!(too_deep(&deep));
        assert!(!too_deep("return [[1]]"));
    }
}
