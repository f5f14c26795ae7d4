//! What a program's tool call resolves or rejects with, given the tool's result (the
//! seed's reading rule, extended to every content kind):
//!
//! - a failed result (`isError`) rejects with an `Error` whose message is its text;
//! - a result holding anything but text (an image, audio, a resource link, an embedded
//!   resource) resolves to its whole MCP content list, every item as it arrived;
//! - otherwise, a tool that declares an `outputSchema` resolves to its
//!   `structuredContent`;
//! - otherwise, the call resolves to the result's text (its text items joined by
//!   newlines).

use protocol::ToolAnswer;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{ToolDefinition, ToolResult};

/// The answer for a call of `definition`'s tool that returned `result`.
pub fn answer(definition: &ToolDefinition, result: &ToolResult) -> ToolAnswer {
    if result.is_error {
        let text = result.joined_text();
        return ToolAnswer::Reject(if text.is_empty() {
            format!("tool {} failed without a message", definition.name)
        } else {
            text
        });
    }
    let value = if result.has_non_text() {
        Value::Array(result.content.iter().map(|c| c.to_value()).collect())
    } else if let (Some(_), Some(structured)) = (&definition.output_schema, &result.structured_content) {
        structured.clone()
    } else {
        Value::String(result.joined_text())
    };
    match RawValue::from_string(value.to_string()) {
        Ok(raw) => ToolAnswer::Resolve(raw),
        Err(e) => ToolAnswer::Reject(format!("tool {} returned a value that is not JSON: {e}", definition.name)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tool::Content;
    use protocol::mcp::empty_object_schema;
    use serde_json::json;

    fn def(output_schema: Option<Value>) -> ToolDefinition {
        ToolDefinition { output_schema, ..ToolDefinition::new("t", "d", empty_object_schema()) }
    }

    fn resolved(answer: ToolAnswer) -> Value {
        match answer {
            ToolAnswer::Resolve(v) => serde_json::from_str(v.get()).unwrap(),
            ToolAnswer::Reject(m) => panic!("rejected: {m}"),
        }
    }

    #[test]
    fn structured_content_only_with_an_output_schema() {
        let result = ToolResult::json(json!({"t": 3}));
        assert_eq!(resolved(answer(&def(Some(json!({"type": "object"}))), &result)), json!({"t": 3}));
        assert_eq!(resolved(answer(&def(None), &result)), json!("{\"t\":3}"));
    }

    #[test]
    fn anything_but_text_resolves_to_the_whole_content_list() {
        let items = json!([
            { "type": "text", "text": "a chart" },
            { "type": "image", "data": "AAAA", "mimeType": "image/png" }
        ]);
        let result = ToolResult { content: serde_json::from_value(items.clone()).unwrap(), ..Default::default() };
        assert_eq!(resolved(answer(&def(None), &result)), items);
        for other in [
            json!({ "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" }),
            json!({ "type": "resource_link", "uri": "file:///r.txt", "name": "r.txt", "annotations": { "audience": ["assistant"] } }),
            json!({ "type": "resource", "resource": { "uri": "mem://r", "text": "inline" }, "_meta": { "k": 1 } }),
        ] {
            let result = ToolResult {
                content: vec![Content::text("with"), serde_json::from_value(other.clone()).unwrap()],
                structured_content: Some(json!({"ignored": true})),
                ..Default::default()
            };
            assert_eq!(
                resolved(answer(&def(Some(json!({"type": "object"}))), &result)),
                json!([{ "type": "text", "text": "with" }, other])
            );
        }
    }

    #[test]
    fn errors_reject_with_the_text() {
        match answer(&def(None), &ToolResult::error("city not found")) {
            ToolAnswer::Reject(m) => assert_eq!(m, "city not found"),
            ToolAnswer::Resolve(_) => panic!(),
        }
        match answer(&def(None), &ToolResult { is_error: true, ..Default::default() }) {
            ToolAnswer::Reject(m) => assert_eq!(m, "tool t failed without a message"),
            ToolAnswer::Resolve(_) => panic!(),
        }
    }
}
