//! The tools a program may call.
//!
//! - the model is MCP's own ([`ToolDefinition`] is MCP's `Tool`, [`ToolResult`] its
//!   `CallToolResult`, [`Content`] every content kind), mirrored in `protocol::mcp` so
//!   that plugins, the host and MCP clients share one definition;
//! - [`handler`]: how calls are served ([`ToolHandler`], [`FnTool`]) and the context
//!   each call carries;
//! - [`schema`]: a tool's compiled JSON Schemas and the messages that name a wrong field;
//! - [`answer`]: what a program's call resolves or rejects with, given the result;
//! - [`form`]: a form a tool's server asks a person to fill in during a call;
//! - [`catalog`]: every plugin's tools, and the plugins that are unavailable;
//! - [`artifacts`]: what tools keep for the session (plico's `ctx.artifacts`);
//! - [`shown`]: what a person is shown of a call they are asked to approve;
//! - [`skills`]: seed 001's skills and agents, and what one session has loaded of them;
//! - [`search`]: the catalog as the `search` crate's documents, for `tools.$search`'s
//!   rankers (by words, BM25, and by meaning, a sentence encoder, fused); that crate's
//!   [`semantic`] (the model and its embeddings cache), [`encoder`] (the model itself,
//!   and `codemode pack-search-model`) and [`bounded_file`] (how the model's files and
//!   the cache are read: no link, a regular file, within a bound) are re-exported here,
//!   where the host names them.
//!
//! A [`Tool`] is a definition, its handler and (once it joins a catalog) its compiled
//! schemas.

pub mod answer;
pub mod artifacts;
pub mod catalog;
pub mod form;
pub mod handler;
pub mod schema;
pub mod search;
pub mod shown;
pub mod skills;

pub use ::search::{bounded_file, encoder, semantic};

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

pub use catalog::{is_valid_name, Catalog, CatalogError, Recover, Unavailable};
pub use handler::{
    ApprovalAnswer, ApprovalQuestion, Approver, CallContext, CallProgress, CallStatus, Caller, FnTool, OpenedFolder,
    ProgressSink, SampleRequest, Sampler, ToolHandler,
};
pub use protocol::mcp::{
    Annotations, Approval, CallToolResult as ToolResult, Content, ResourceContents, Tool as ToolDefinition,
    ToolAnnotations,
};
use schema::Schemas;

/// A tool: its definition and its handler.
#[derive(Clone)]
pub struct Tool {
    /// What the tool is.
    pub definition: ToolDefinition,
    /// What serves its calls.
    pub handler: Arc<dyn ToolHandler>,
    /// The compiled schemas, set when the tool joins a catalog.
    schemas: Option<Arc<Schemas>>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("definition", &self.definition).finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool served by an async closure.
    pub fn from_fn<F, Fut>(definition: ToolDefinition, f: F) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        Self { definition, handler: Arc::new(FnTool(f)), schemas: None }
    }

    /// A tool served by any handler.
    pub fn new(definition: ToolDefinition, handler: Arc<dyn ToolHandler>) -> Self {
        Self { definition, handler, schemas: None }
    }

    /// Checks `input` against the input schema. The error says which field is wrong and
    /// what was expected, for the program (and the agent) to correct the call.
    pub fn check_input(&self, qualified: &str, input: &Value) -> Result<(), String> {
        match &self.schemas {
            Some(s) => s.check_input(input).map_err(|why| format!("invalid input for {qualified}: {why}")),
            None => Ok(()),
        }
    }

    /// Checks a result's `structuredContent` against the output schema, when there is one.
    pub fn check_output(&self, qualified: &str, result: &ToolResult) -> Result<(), String> {
        let Some(schemas) = self.schemas.as_ref().filter(|s| s.has_output()) else { return Ok(()) };
        if result.is_error {
            return Ok(());
        }
        let Some(structured) = &result.structured_content else {
            return Err(format!("{qualified} declares an outputSchema but returned no structuredContent"));
        };
        match schemas.check_output(structured) {
            Some(Err(why)) => Err(format!("{qualified} returned a result that does not match its outputSchema: {why}")),
            _ => Ok(()),
        }
    }

    /// Runs a call whose input passed [`Tool::check_input`] (every caller checks it
    /// first, before anyone is asked to approve the call): the handler (a panic is a
    /// failure, not a crash), then the result checked against the output schema. `Err`
    /// is the message of a failed call.
    pub async fn run_validated(&self, input: Value, context: CallContext) -> Result<ToolResult, String> {
        let qualified = format!("{}.{}", context.plugin, context.tool);
        let result = std::panic::AssertUnwindSafe(self.handler.call(input, context))
            .catch_unwind()
            .await
            .map_err(|_| format!("tool {qualified} crashed"))?;
        self.check_output(&qualified, &result)?;
        Ok(result)
    }

    /// What the program's call resolves or rejects with, given the tool's result
    /// ([`answer::answer`]).
    pub fn answer(&self, result: &ToolResult) -> protocol::ToolAnswer {
        answer::answer(&self.definition, result)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn added(input: Value, output: Option<Value>) -> Tool {
        let mut c = Catalog::new();
        let def = ToolDefinition { output_schema: output, ..ToolDefinition::new("t", "d", input) };
        c.add("p", Tool::from_fn(def, |_, _| async { ToolResult::text("x") })).unwrap();
        c.get("p", "t").unwrap().clone()
    }

    #[test]
    fn inputs_are_checked_against_the_schema_naming_the_field() {
        let t =
            added(json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}), None);
        assert_eq!(t.check_input("weather.forecast", &json!({"city": "Oslo"})), Ok(()));
        assert_eq!(
            t.check_input("weather.forecast", &json!({"city": 5})).unwrap_err(),
            "invalid input for weather.forecast: input.city: 5 is not of type \"string\""
        );
    }

    #[test]
    fn outputs_are_checked_when_there_is_an_output_schema() {
        let t = added(
            json!({"type": "object"}),
            Some(json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]})),
        );
        assert_eq!(t.check_output("p.t", &ToolResult::json(json!({"n": 1}))), Ok(()));
        assert_eq!(
            t.check_output("p.t", &ToolResult::json(json!({"n": "one"}))).unwrap_err(),
            "p.t returned a result that does not match its outputSchema: output.n: \"one\" is not of type \"number\""
        );
        assert_eq!(
            t.check_output("p.t", &ToolResult::text("x")).unwrap_err(),
            "p.t declares an outputSchema but returned no structuredContent"
        );
        assert_eq!(t.check_output("p.t", &ToolResult::error("boom")), Ok(()));
        let plain = added(json!({"type": "object"}), None);
        assert_eq!(plain.check_output("p.t", &ToolResult::text("x")), Ok(()));
    }

    /// The mirror is faithful: every content kind and every field survives a trip
    /// through rmcp's own types (what the MCP client and server use), and back.
    #[test]
    fn results_and_tools_survive_rmcps_types_unchanged() {
        let result = json!({
            "content": [
                { "type": "text", "text": "t", "annotations": { "audience": ["user"], "priority": 0.5 } },
                { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
                { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" },
                { "type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain" },
                { "type": "resource", "resource": { "uri": "mem://x", "mimeType": "text/plain", "text": "inline" } },
                { "type": "resource", "resource": { "uri": "mem://y", "blob": "AAEC" } }
            ],
            "structuredContent": { "n": 1 },
            "isError": false,
            "_meta": { "trace": "abc" }
        });
        let ours: ToolResult = serde_json::from_value(result.clone()).unwrap();
        let theirs: rmcp::model::CallToolResult = serde_json::from_value(serde_json::to_value(&ours).unwrap()).unwrap();
        let back: ToolResult = serde_json::from_value(serde_json::to_value(&theirs).unwrap()).unwrap();
        assert_eq!(back, ours);
        let tool = json!({ "name": "t", "title": "T", "description": "d", "inputSchema": { "type": "object" }, "outputSchema": { "type": "object" }, "annotations": { "readOnlyHint": true, "destructiveHint": false } });
        let ours: ToolDefinition = serde_json::from_value(tool).unwrap();
        let theirs: rmcp::model::Tool = serde_json::from_value(serde_json::to_value(&ours).unwrap()).unwrap();
        let back: ToolDefinition = serde_json::from_value(serde_json::to_value(&theirs).unwrap()).unwrap();
        assert_eq!(back, ours);
    }
}
