//! The tools a program may call: definitions, handlers and results.
//!
//! A [`Catalog`] groups tools by plugin. Each [`Tool`] pairs a definition (the MCP
//! tool fields) with a [`ToolHandler`] that serves calls; [`FnTool`] makes a handler
//! from an async Rust closure, so embedders and tests need no plugin processes. The
//! catalog also decides what a JavaScript call resolves with ([`Tool::answer`]): the
//! `structuredContent` when the tool declares an `outputSchema`, the content list when
//! the result holds images, the text otherwise, and a rejection when the result is an
//! error.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use protocol::{PluginTools, ToolAnswer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One item of a tool result (MCP content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// For example `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

/// What a tool returns (the MCP `CallToolResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The result's content items.
    pub content: Vec<Content>,
    /// Structured data, for tools that declare an output schema.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the call failed; the text says why.
    #[serde(rename = "isError", default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl ToolResult {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![Content::Text { text: text.into() }], ..Self::default() }
    }

    /// A successful result carrying a JSON value, as text and as `structuredContent`.
    pub fn json(value: Value) -> Self {
        Self { content: vec![Content::Text { text: value.to_string() }], structured_content: Some(value), is_error: false }
    }

    /// A failed result; the program's call rejects with `message`.
    pub fn error(message: impl Into<String>) -> Self {
        Self { content: vec![Content::Text { text: message.into() }], structured_content: None, is_error: true }
    }

    /// The text items, joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                Content::Image { .. } => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// Who is calling, and a signal that fires when the call is given up.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The plugin's name.
    pub plugin: String,
    /// The tool's name.
    pub tool: String,
    /// Unique within the program.
    pub call_id: u64,
    /// Who runs the program (workspace, agent, chat), as the caller told the executor.
    pub caller: Arc<Caller>,
    /// Cancelled when the program ends, hits a limit or is cancelled.
    pub cancel: CancellationToken,
}

/// Who runs a program: passed to every tool call's context. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Caller {
    /// The absolute folder the session works in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The workspace's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// The agent, for example `codex` or `claude:work`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The chat, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The agent's id for this `execute` call, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl CallContext {
    /// The context as plugins receive it: the caller's fields, and `callId` (the
    /// agent's id when it gave one, else `<program call id>`).
    pub fn wire(&self) -> Value {
        let mut value = serde_json::to_value(&*self.caller).unwrap_or_else(|_| Value::Object(Default::default()));
        if let Value::Object(map) = &mut value {
            map.entry("callId").or_insert_with(|| Value::String(self.call_id.to_string()));
        }
        value
    }
}

/// Serves calls to one tool.
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the tool. Errors are results with `is_error` set, never panics.
    fn call(&self, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult>;
}

/// A [`ToolHandler`] made from an async closure.
pub struct FnTool<F>(pub F);

impl<F, Fut> ToolHandler for FnTool<F>
where
    F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    fn call(&self, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin((self.0)(input, context))
    }
}

/// A tool's definition: the fields the program's author (and the agent) sees; the
/// shape of MCP's `Tool`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// 1 to 64 letters, digits, `_` or `-`.
    pub name: String,
    /// What the tool does and when to use it.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input (an object schema); none means an empty object.
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of the result, when the tool returns structured data.
    #[serde(rename = "outputSchema", default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// MCP's behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Each call must be approved by a person first (the MCP server asks through
    /// elicitation). Set by the plugin or by the configuration's `require_approval`.
    #[serde(rename = "requiresApproval", default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_approval: bool,
}

/// MCP's tool annotations: hints about what a tool does, for clients and people.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolAnnotations {
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite things.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same input does nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It reaches things outside (the internet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolDefinition {
    /// A definition with a name, a description and an input schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self { name: name.into(), description: description.into(), input_schema, ..Self::default() }
    }

    /// The same definition with an output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object", "properties": {} })
}

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

/// A tool's schemas, compiled once.
struct Schemas {
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

/// Every validation error as `<root>.a.b: message` (`root` is `input` or `output`),
/// joined by `; `. A large value is described, not quoted: the message of a 30 MiB
/// string must not be 30 MiB.
fn describe_errors(validator: &jsonschema::Validator, value: &Value, root: &str) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(5)
        .map(|e| {
            let path = e.instance_path().to_string();
            let field = format!("{root}{}", path.replace('/', "."));
            match brief(e.instance()) {
                None => format!("{field}: {e}"),
                Some(placeholder) => format!("{field}: {}", e.masked_with(placeholder)),
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Longest string quoted in a validation message.
const MAX_QUOTED_CHARS: usize = 200;

/// A short description of a value too large to quote; `None` when it can be quoted.
fn brief(value: &Value) -> Option<String> {
    let mut room = MAX_QUOTED_CHARS;
    if fits(value, &mut room) {
        return None;
    }
    Some(match value {
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(map) => format!("an object with {} properties", map.len()),
        other => other.to_string(),
    })
}

/// True when `value` written as JSON takes at most `room` characters (roughly; it
/// stops counting as soon as it does not).
fn fits(value: &Value, room: &mut usize) -> bool {
    let mut take = |n: usize| match room.checked_sub(n) {
        Some(left) => {
            *room = left;
            true
        }
        None => false,
    };
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => take(8),
        Value::String(s) => take(s.len() + 2),
        Value::Array(items) => take(2) && items.iter().all(|v| fits(v, room)),
        Value::Object(map) => take(2) && map.iter().all(|(k, v)| room.checked_sub(k.len() + 4).map(|left| *room = left).is_some() && fits(v, room)),
    }
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
            Some(s) => describe_errors(&s.input, input, "input").map_err(|why| format!("invalid input for {qualified}: {why}")),
            None => Ok(()),
        }
    }

    /// Checks a result's `structuredContent` against the output schema, when there is one.
    pub fn check_output(&self, qualified: &str, result: &ToolResult) -> Result<(), String> {
        let Some(validator) = self.schemas.as_ref().and_then(|s| s.output.as_ref()) else { return Ok(()) };
        if result.is_error {
            return Ok(());
        }
        let Some(structured) = &result.structured_content else {
            return Err(format!("{qualified} declares an outputSchema but returned no structuredContent"));
        };
        describe_errors(validator, structured, "output").map_err(|why| format!("{qualified} returned a result that does not match its outputSchema: {why}"))
    }

    /// Runs a call whose input passed [`Tool::check_input`] (every caller checks it
    /// first, before anyone is asked to approve the call): the handler (a panic is a
    /// failure, not a crash), then the result checked against the output schema. `Err`
    /// is the message of a failed call.
    pub async fn run_validated(&self, input: Value, context: CallContext) -> Result<ToolResult, String> {
        let qualified = format!("{}.{}", context.plugin, context.tool);
        let result = std::panic::AssertUnwindSafe(self.handler.call(input, context)).catch_unwind().await.map_err(|_| format!("tool {qualified} crashed"))?;
        self.check_output(&qualified, &result)?;
        Ok(result)
    }

    /// What the program's call resolves or rejects with, given the tool's result.
    pub fn answer(&self, result: &ToolResult) -> ToolAnswer {
        if result.is_error {
            let text = result.joined_text();
            return ToolAnswer::Reject(if text.is_empty() { format!("tool {} failed without a message", self.definition.name) } else { text });
        }
        let value = if result.content.iter().any(|c| matches!(c, Content::Image { .. })) {
            serde_json::to_value(&result.content).unwrap_or(Value::Null)
        } else if let (Some(_), Some(structured)) = (&self.definition.output_schema, &result.structured_content) {
            structured.clone()
        } else {
            Value::String(result.joined_text())
        };
        match RawValue::from_string(value.to_string()) {
            Ok(raw) => ToolAnswer::Resolve(raw),
            Err(e) => ToolAnswer::Reject(format!("tool {} returned a value that is not JSON: {e}", self.definition.name)),
        }
    }
}

/// Why a tool definition was refused; names the plugin, the tool and the field.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CatalogError {
    /// A plugin or tool name breaks the naming rule.
    #[error("plugin {plugin:?}: {what} name {name:?} is invalid: use 1 to 64 letters, digits, '_' or '-'")]
    InvalidName {
        /// The plugin.
        plugin: String,
        /// "plugin" or "tool".
        what: &'static str,
        /// The offending name.
        name: String,
    },
    /// The same tool was added twice to one plugin.
    #[error("plugin {plugin:?}: tool {tool:?} is defined twice")]
    Duplicate {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
    },
    /// A field of the definition is wrong.
    #[error("plugin {plugin:?}, tool {tool:?}: field {field} {problem}")]
    InvalidField {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// The field (`description`, `inputSchema`, `outputSchema`).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// True for 1 to 64 letters, digits, `_` or `-`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Tries a plugin that could not be started again, now (when its backoff allows):
/// when it comes back, the executor's catalog is replaced with one that holds its
/// tools. The executor calls it when a program calls a tool of the plugin.
pub trait Recover: Send + Sync + 'static {
    /// Tries once; resolves when the attempt is over (whatever its result).
    fn recover(&self) -> BoxFuture<'static, ()>;
}

/// A plugin that is configured but could not be started.
#[derive(Clone)]
pub struct Unavailable {
    /// Why, as the agent reads it (with the last lines of its stderr when it wrote some).
    pub reason: String,
    /// How to try it again.
    pub recover: Option<Arc<dyn Recover>>,
}

impl std::fmt::Debug for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unavailable").field("reason", &self.reason).finish_non_exhaustive()
    }
}

/// The tools of every plugin, by plugin name then tool name, and the plugins that are
/// configured but unavailable.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    plugins: BTreeMap<String, BTreeMap<String, Tool>>,
    unavailable: BTreeMap<String, Unavailable>,
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool to a plugin: checks its names and fields and compiles its schemas.
    pub fn add(&mut self, plugin: &str, mut tool: Tool) -> Result<(), CatalogError> {
        let name = tool.definition.name.clone();
        if !is_valid_name(plugin) {
            return Err(CatalogError::InvalidName { plugin: plugin.into(), what: "plugin", name: plugin.into() });
        }
        if !is_valid_name(&name) {
            return Err(CatalogError::InvalidName { plugin: plugin.into(), what: "tool", name });
        }
        let invalid = |field: &'static str, problem: String| CatalogError::InvalidField { plugin: plugin.into(), tool: name.clone(), field, problem };
        if tool.definition.description.trim().is_empty() {
            return Err(invalid("description", "is missing: say what the tool does and when to use it".into()));
        }
        if tool.definition.input_schema.is_null() {
            tool.definition.input_schema = empty_object_schema();
        }
        if tool.definition.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(invalid("inputSchema", "must be a JSON Schema object with \"type\": \"object\"".into()));
        }
        let input = jsonschema::validator_for(&tool.definition.input_schema).map_err(|e| invalid("inputSchema", format!("is not a valid JSON Schema: {e}")))?;
        let output = match &tool.definition.output_schema {
            None => None,
            Some(schema) if !schema.is_object() => return Err(invalid("outputSchema", "must be a JSON Schema object".into())),
            Some(schema) => Some(jsonschema::validator_for(schema).map_err(|e| invalid("outputSchema", format!("is not a valid JSON Schema: {e}")))?),
        };
        tool.schemas = Some(Arc::new(Schemas { input, output }));
        let tools = self.plugins.entry(plugin.to_string()).or_default();
        if tools.contains_key(&name) {
            return Err(CatalogError::Duplicate { plugin: plugin.into(), tool: name });
        }
        tools.insert(name, tool);
        Ok(())
    }

    /// Removes a tool; true when it was there.
    pub fn remove(&mut self, plugin: &str, tool: &str) -> bool {
        let Some(tools) = self.plugins.get_mut(plugin) else { return false };
        let removed = tools.remove(tool).is_some();
        if tools.is_empty() {
            self.plugins.remove(plugin);
        }
        removed
    }

    /// The name a tool goes by where tools of all plugins share one namespace (separate
    /// tools mode, listings): its own name, or `<plugin>_<name>` when another plugin has
    /// a tool of the same name.
    pub fn exposed_name(&self, plugin: &str, tool: &str) -> String {
        let shared = self.plugins.iter().filter(|(p, tools)| p.as_str() != plugin && tools.contains_key(tool)).count() > 0;
        if shared {
            format!("{plugin}_{tool}")
        } else {
            tool.to_string()
        }
    }

    /// Builder form of [`Catalog::add`].
    pub fn with(mut self, plugin: &str, tool: Tool) -> Result<Self, CatalogError> {
        self.add(plugin, tool)?;
        Ok(self)
    }

    /// Finds a tool.
    pub fn get(&self, plugin: &str, tool: &str) -> Option<&Tool> {
        self.plugins.get(plugin)?.get(tool)
    }

    /// Every plugin with its tools, in name order.
    pub fn plugins(&self) -> impl Iterator<Item = (&str, impl Iterator<Item = &Tool>)> {
        self.plugins.iter().map(|(p, tools)| (p.as_str(), tools.values()))
    }

    /// Records that `plugin` is configured but could not be started, and why.
    pub fn mark_unavailable(&mut self, plugin: &str, reason: String, recover: Option<Arc<dyn Recover>>) {
        self.unavailable.insert(plugin.to_string(), Unavailable { reason, recover });
    }

    /// Why `plugin` is unavailable, when it is.
    pub fn unavailable(&self, plugin: &str) -> Option<&Unavailable> {
        self.unavailable.get(plugin).filter(|_| !self.plugins.contains_key(plugin))
    }

    /// Every unavailable plugin with its reason.
    pub fn unavailable_plugins(&self) -> impl Iterator<Item = (&str, &Unavailable)> {
        self.unavailable.iter().filter(|(p, _)| !self.plugins.contains_key(p.as_str())).map(|(p, u)| (p.as_str(), u))
    }

    /// The catalog as the worker needs it: names only, and unavailable plugins with
    /// their reason.
    pub fn worker_view(&self) -> Vec<PluginTools> {
        let available = self.plugins.iter().map(|(plugin, tools)| PluginTools { plugin: plugin.clone(), tools: tools.keys().cloned().collect(), unavailable: None });
        let unavailable = self.unavailable_plugins().map(|(plugin, u)| PluginTools { plugin: plugin.to_string(), tools: Vec::new(), unavailable: Some(u.reason.clone()) });
        available.chain(unavailable).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn def(name: &str, output_schema: Option<Value>) -> ToolDefinition {
        ToolDefinition { output_schema, ..ToolDefinition::new(name, "d", empty_object_schema()) }
    }

    fn tool(name: &str, output_schema: Option<Value>) -> Tool {
        Tool::from_fn(def(name, output_schema), |_, _| async { ToolResult::text("x") })
    }

    fn resolved(answer: ToolAnswer) -> String {
        match answer {
            ToolAnswer::Resolve(v) => v.get().to_string(),
            ToolAnswer::Reject(m) => panic!("rejected: {m}"),
        }
    }

    #[test]
    fn structured_content_only_with_an_output_schema() {
        let result = ToolResult::json(json!({"t": 3}));
        assert_eq!(resolved(tool("a", Some(json!({"type": "object"}))).answer(&result)), r#"{"t":3}"#);
        assert_eq!(resolved(tool("a", None).answer(&result)), r#""{\"t\":3}""#);
    }

    #[test]
    fn images_resolve_to_the_content_list() {
        let result = ToolResult {
            content: vec![Content::Text { text: "a chart".into() }, Content::Image { data: "AAAA".into(), mime_type: "image/png".into() }],
            ..Default::default()
        };
        let value: Value = serde_json::from_str(&resolved(tool("a", None).answer(&result))).unwrap();
        assert_eq!(value, json!([{ "type": "text", "text": "a chart" }, { "type": "image", "data": "AAAA", "mimeType": "image/png" }]));
    }

    #[test]
    fn errors_reject_with_the_text() {
        match tool("a", None).answer(&ToolResult::error("city not found")) {
            ToolAnswer::Reject(m) => assert_eq!(m, "city not found"),
            ToolAnswer::Resolve(_) => panic!(),
        }
    }

    #[test]
    fn inputs_are_checked_against_the_schema_naming_the_field() {
        let mut c = Catalog::new();
        let mut t = tool("forecast", None);
        t.definition.input_schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]});
        c.add("weather", t).unwrap();
        let t = c.get("weather", "forecast").unwrap();
        assert_eq!(t.check_input("weather.forecast", &json!({"city": "Oslo", "days": 2})), Ok(()));
        assert_eq!(t.check_input("weather.forecast", &json!({"city": 5})).unwrap_err(), "invalid input for weather.forecast: input.city: 5 is not of type \"string\"");
        assert_eq!(t.check_input("weather.forecast", &json!({})).unwrap_err(), "invalid input for weather.forecast: input: \"city\" is a required property");
        assert!(t.check_input("weather.forecast", &json!({"city": "x", "days": 0})).unwrap_err().contains("input.days: 0 is less than the minimum of 1"));
        let huge = "x".repeat(100_000);
        assert_eq!(t.check_input("weather.forecast", &json!({"city": 5, "days": huge})).unwrap_err(), "invalid input for weather.forecast: input.city: 5 is not of type \"string\"; input.days: a string of 100000 characters is not of type \"integer\"");
    }

    #[test]
    fn outputs_are_checked_when_there_is_an_output_schema() {
        let mut c = Catalog::new();
        c.add("p", tool("t", Some(json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]})))).unwrap();
        let t = c.get("p", "t").unwrap();
        assert_eq!(t.check_output("p.t", &ToolResult::json(json!({"n": 1}))), Ok(()));
        assert_eq!(t.check_output("p.t", &ToolResult::json(json!({"n": "one"}))).unwrap_err(), "p.t returned a result that does not match its outputSchema: output.n: \"one\" is not of type \"number\"");
        assert_eq!(t.check_output("p.t", &ToolResult::text("x")).unwrap_err(), "p.t declares an outputSchema but returned no structuredContent");
        assert_eq!(t.check_output("p.t", &ToolResult::error("boom")), Ok(()));
    }

    #[test]
    fn colliding_names_are_prefixed_with_their_plugin() {
        let mut c = Catalog::new();
        c.add("a", tool("search", None)).unwrap();
        c.add("b", tool("search", None)).unwrap();
        c.add("b", tool("only", None)).unwrap();
        assert_eq!(c.exposed_name("a", "search"), "a_search");
        assert_eq!(c.exposed_name("b", "search"), "b_search");
        assert_eq!(c.exposed_name("b", "only"), "only");
        assert!(c.remove("a", "search"));
        assert_eq!(c.exposed_name("b", "search"), "search");
    }

    #[test]
    fn names_are_checked() {
        let mut c = Catalog::new();
        assert!(c.add("my-db", tool("search-rows", None)).is_ok());
        assert_eq!(c.add("my-db", tool("search-rows", None)), Err(CatalogError::Duplicate { plugin: "my-db".into(), tool: "search-rows".into() }));
        assert!(matches!(c.add("bad name", tool("x", None)), Err(CatalogError::InvalidName { what: "plugin", .. })));
        assert!(matches!(c.add("p", tool(&"x".repeat(65), None)), Err(CatalogError::InvalidName { what: "tool", .. })));
        let mut t = tool("y", None);
        t.definition.input_schema = json!({"type": "string"});
        assert_eq!(c.add("p", t).unwrap_err().to_string(), "plugin \"p\", tool \"y\": field inputSchema must be a JSON Schema object with \"type\": \"object\"");
        let mut t = tool("z", None);
        t.definition.description = " ".into();
        assert_eq!(c.add("p", t).unwrap_err().to_string(), "plugin \"p\", tool \"z\": field description is missing: say what the tool does and when to use it");
        let mut t = tool("w", None);
        t.definition.input_schema = json!({"type": "object", "properties": {"a": {"type": 12}}});
        assert!(c.add("p", t).unwrap_err().to_string().starts_with("plugin \"p\", tool \"w\": field inputSchema is not a valid JSON Schema"));
        assert_eq!(c.worker_view(), vec![PluginTools { plugin: "my-db".into(), tools: vec!["search-rows".into()], unavailable: None }]);
        c.mark_unavailable("broken", "it exited".into(), None);
        assert_eq!(c.worker_view()[1], PluginTools { plugin: "broken".into(), tools: vec![], unavailable: Some("it exited".into()) });
    }
}
