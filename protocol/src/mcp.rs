//! MCP's `Tool` and `CallToolResult`, as plugins, the host and MCP clients exchange
//! them: a faithful mirror of the MCP schema (revision 2025-11-25), kept here so that the
//! worker (which runs JavaScript plugins) and the host share one definition without the
//! worker linking an MCP SDK. The host's tests check it against rmcp's own types.
//!
//! Every content kind MCP defines is modelled ([`Content`]: text, image, audio, resource
//! links, embedded resources), with its `annotations` and `_meta`; a kind this version
//! does not know is kept as it arrived ([`Content::Other`]), so nothing a server sends
//! is lost on its way to a program or an MCP client.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Who a content item is for, and how much it matters (MCP `Annotations`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// `"user"` and/or `"assistant"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<String>>,
    /// From 0 (least) to 1 (most important).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// What an embedded resource holds: text or base64 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// A text resource.
    Text {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its text.
        text: String,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// A binary resource.
    Blob {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its bytes, base64-encoded.
        blob: String,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
}

/// One item of a tool result (MCP `ContentBlock`).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// `{ "type": "text", "text" }`.
    Text {
        /// The text.
        text: String,
        /// Annotations.
        annotations: Option<Annotations>,
        /// Metadata.
        meta: Option<Map<String, Value>>,
    },
    /// `{ "type": "image", "data", "mimeType" }`.
    Image {
        /// Base64 data.
        data: String,
        /// For example `image/png`.
        mime_type: String,
        /// Annotations.
        annotations: Option<Annotations>,
        /// Metadata.
        meta: Option<Map<String, Value>>,
    },
    /// `{ "type": "audio", "data", "mimeType" }`.
    Audio {
        /// Base64 data.
        data: String,
        /// For example `audio/wav`.
        mime_type: String,
        /// Annotations.
        annotations: Option<Annotations>,
        /// Metadata.
        meta: Option<Map<String, Value>>,
    },
    /// `{ "type": "resource_link", "uri", "name", ... }`: a resource the client may read.
    ResourceLink {
        /// Every field as it arrived (`uri`, `name`, `title`, `description`, `mimeType`,
        /// `size`, `icons`, `annotations`, `_meta`); `uri` and `name` are checked.
        fields: Map<String, Value>,
    },
    /// `{ "type": "resource", "resource" }`: a resource embedded in the result.
    Resource {
        /// The resource.
        resource: ResourceContents,
        /// Annotations.
        annotations: Option<Annotations>,
        /// Metadata.
        meta: Option<Map<String, Value>>,
    },
    /// A content type this version does not know, kept as it arrived.
    Other(Map<String, Value>),
}

/// Why a content item was refused.
fn invalid<E: serde::de::Error>(kind: &str, what: &str) -> E {
    E::custom(format!("a {kind:?} content item needs {what}"))
}

impl Content {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into(), annotations: None, meta: None }
    }

    /// An image item.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image { data: data.into(), mime_type: mime_type.into(), annotations: None, meta: None }
    }

    /// The item's `type`.
    pub fn kind(&self) -> &str {
        match self {
            Content::Text { .. } => "text",
            Content::Image { .. } => "image",
            Content::Audio { .. } => "audio",
            Content::ResourceLink { .. } => "resource_link",
            Content::Resource { .. } => "resource",
            Content::Other(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a text item.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The item as JSON (what programs and MCP clients receive).
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        let common =
            |map: &mut Map<String, Value>, annotations: &Option<Annotations>, meta: &Option<Map<String, Value>>| {
                if let Some(a) = annotations {
                    map.insert("annotations".into(), serde_json::to_value(a).unwrap_or(Value::Null));
                }
                if let Some(m) = meta {
                    map.insert("_meta".into(), Value::Object(m.clone()));
                }
            };
        match self {
            Content::Text { text, annotations, meta } => {
                map.insert("type".into(), "text".into());
                map.insert("text".into(), text.clone().into());
                common(&mut map, annotations, meta);
            }
            Content::Image { data, mime_type, annotations, meta }
            | Content::Audio { data, mime_type, annotations, meta } => {
                map.insert("type".into(), self.kind().into());
                map.insert("data".into(), data.clone().into());
                map.insert("mimeType".into(), mime_type.clone().into());
                common(&mut map, annotations, meta);
            }
            Content::ResourceLink { fields } => {
                map.insert("type".into(), "resource_link".into());
                map.extend(fields.iter().filter(|(k, _)| k.as_str() != "type").map(|(k, v)| (k.clone(), v.clone())));
            }
            Content::Resource { resource, annotations, meta } => {
                map.insert("type".into(), "resource".into());
                map.insert("resource".into(), serde_json::to_value(resource).unwrap_or(Value::Null));
                common(&mut map, annotations, meta);
            }
            Content::Other(fields) => return Value::Object(fields.clone()),
        }
        Value::Object(map)
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        let kind = map
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| D::Error::custom("a content item needs a \"type\""))?;
        let annotations = match map.remove("annotations") {
            None | Some(Value::Null) => None,
            Some(a) => Some(serde_json::from_value(a).map_err(D::Error::custom)?),
        };
        let meta = match map.remove("_meta") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(D::Error::custom("`_meta` must be an object")),
        };
        let string = |map: &mut Map<String, Value>, key: &str| match map.remove(key) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(invalid::<D::Error>(&kind, &format!("a string {key:?}"))),
        };
        Ok(match kind.as_str() {
            "text" => Content::Text { text: string(&mut map, "text")?, annotations, meta },
            "image" => Content::Image {
                data: string(&mut map, "data")?,
                mime_type: string(&mut map, "mimeType")?,
                annotations,
                meta,
            },
            "audio" => Content::Audio {
                data: string(&mut map, "data")?,
                mime_type: string(&mut map, "mimeType")?,
                annotations,
                meta,
            },
            "resource_link" => {
                for key in ["uri", "name"] {
                    if !map.get(key).is_some_and(Value::is_string) {
                        return Err(invalid(&kind, &format!("a string {key:?}")));
                    }
                }
                if let Some(a) = annotations {
                    map.insert("annotations".into(), serde_json::to_value(a).map_err(D::Error::custom)?);
                }
                if let Some(m) = meta {
                    map.insert("_meta".into(), Value::Object(m));
                }
                Content::ResourceLink { fields: map }
            }
            "resource" => {
                let resource = map.remove("resource").ok_or_else(|| invalid::<D::Error>(&kind, "a \"resource\""))?;
                let resource = serde_json::from_value(resource)
                    .map_err(|_| invalid::<D::Error>(&kind, "a \"resource\" with a uri and a text or a blob"))?;
                Content::Resource { resource, annotations, meta }
            }
            _ => {
                if let Some(a) = annotations {
                    map.insert("annotations".into(), serde_json::to_value(a).map_err(D::Error::custom)?);
                }
                if let Some(m) = meta {
                    map.insert("_meta".into(), Value::Object(m));
                }
                Content::Other(map)
            }
        })
    }
}

/// What a tool returns (MCP `CallToolResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallToolResult {
    /// The result's content items.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Structured data (what a tool with an `outputSchema` returns).
    #[serde(rename = "structuredContent", default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the call failed; the text says why.
    #[serde(rename = "isError", default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![Content::text(text)], ..Self::default() }
    }

    /// A successful result carrying a JSON value, as text and as `structuredContent`.
    pub fn json(value: Value) -> Self {
        Self { content: vec![Content::text(value.to_string())], structured_content: Some(value), ..Self::default() }
    }

    /// A failed result whose text says why.
    pub fn error(message: impl Into<String>) -> Self {
        Self { content: vec![Content::text(message)], is_error: true, ..Self::default() }
    }

    /// The text items, joined by newlines.
    pub fn joined_text(&self) -> String {
        self.content.iter().filter_map(Content::as_text).collect::<Vec<_>>().join("\n")
    }

    /// True when an item is not text (an image, audio, a resource...): then programs
    /// read the whole content list.
    pub fn has_non_text(&self) -> bool {
        self.content.iter().any(|c| !matches!(c, Content::Text { .. }))
    }
}

/// MCP's hints about what a tool does (hints a later revision adds are kept in
/// `other`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    /// Hints this version does not know, kept as they arrived.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A tool (MCP `Tool`), with codemode's one addition, `requiresApproval`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// 1 to 64 letters, digits, `_` or `-`.
    pub name: String,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does and when to use it.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input (an object schema); none means an empty object.
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the tool returns structured data.
    #[serde(rename = "outputSchema", default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// MCP's behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons for the tool (kept as they arrived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// codemode's addition: when a person must approve the tool's calls first.
    #[serde(rename = "requiresApproval", default, skip_serializing_if = "Approval::is_never")]
    pub requires_approval: Approval,
    /// codemode's addition: why the approval is asked for, shown to the person.
    #[serde(rename = "approvalReason", default, skip_serializing_if = "Option::is_none")]
    pub approval_reason: Option<String>,
    /// codemode's addition: callable by name, but left out of what the agent is shown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// Seed 000's `scope`: the tool is offered only where this scope is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// codemode's addition: the folder of the skill or agent the tool is private to
    /// (seed 001: `skills/short-url`, `agents/reviewer`, `agents/reviewer/skills/review`;
    /// see [`crate::skills`]): callable and declared only once a session loaded that
    /// skill or selected that agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// When a person must approve a tool's calls (codemode's `requiresApproval`): written
/// `true`/`false`, or `"always"`, `"once"` (once per MCP session) or `"never"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Approval {
    /// No approval.
    #[default]
    Never,
    /// Every call.
    Always,
    /// The first call of each session; later calls in that session run.
    OncePerSession,
}

impl Approval {
    /// True for [`Approval::Never`].
    pub fn is_never(&self) -> bool {
        *self == Approval::Never
    }

    /// The word the wire uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::Never => "never",
            Approval::Always => "always",
            Approval::OncePerSession => "once",
        }
    }
}

impl Serialize for Approval {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Approval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(true) => Ok(Approval::Always),
            Value::Bool(false) | Value::Null => Ok(Approval::Never),
            Value::String(s) if s == "always" => Ok(Approval::Always),
            Value::String(s) if s == "once" => Ok(Approval::OncePerSession),
            Value::String(s) if s == "never" => Ok(Approval::Never),
            other => Err(serde::de::Error::custom(format!(
                "requiresApproval must be true, false, \"always\", \"once\" or \"never\", not {other}"
            ))),
        }
    }
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self { name: name.into(), description: description.into(), input_schema, ..Self::default() }
    }

    /// The same tool with an output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Whether every session is shown the tool from the start (declared, listed,
    /// searched): neither `hidden` nor private to a skill or an agent (`owner`).
    pub fn is_public(&self) -> bool {
        !self.hidden && self.owner.is_none()
    }
}

/// `{ "type": "object", "properties": {} }`.
pub fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object", "properties": {} })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn every_content_kind_round_trips_unchanged() {
        let items = json!([
            { "type": "text", "text": "hi", "annotations": { "audience": ["user"], "priority": 0.5 }, "_meta": { "k": 1 } },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
            { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "annotations": { "lastModified": "2026-01-01T00:00:00Z" } },
            { "type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain", "size": 3, "title": "A" },
            { "type": "resource", "resource": { "uri": "mem://x", "mimeType": "text/plain", "text": "inline" } },
            { "type": "resource", "resource": { "uri": "mem://y", "blob": "AAEC" }, "_meta": { "z": true } },
            { "type": "hologram", "frames": 3 }
        ]);
        let parsed: Vec<Content> = serde_json::from_value(items.clone()).unwrap();
        assert_eq!(
            parsed.iter().map(Content::kind).collect::<Vec<_>>(),
            ["text", "image", "audio", "resource_link", "resource", "resource", "hologram"]
        );
        assert_eq!(serde_json::to_value(&parsed).unwrap(), items);
    }

    #[test]
    fn broken_items_are_refused_with_what_they_lack() {
        let e = serde_json::from_value::<Content>(json!({ "type": "image", "data": "x" })).unwrap_err().to_string();
        assert_eq!(e, "a \"image\" content item needs a string \"mimeType\"");
        let e =
            serde_json::from_value::<Content>(json!({ "type": "resource_link", "uri": "x" })).unwrap_err().to_string();
        assert_eq!(e, "a \"resource_link\" content item needs a string \"name\"");
        let e = serde_json::from_value::<Content>(json!({ "text": "x" })).unwrap_err().to_string();
        assert_eq!(e, "a content item needs a \"type\"");
    }

    #[test]
    fn results_and_tools_keep_their_fields() {
        let result = json!({ "content": [{ "type": "text", "text": "t" }], "structuredContent": { "n": 1 }, "isError": true, "_meta": { "trace": "abc" } });
        let parsed: CallToolResult = serde_json::from_value(result.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), result);
        assert!(!parsed.has_non_text());
        let tool = json!({ "name": "t", "title": "T", "description": "d", "inputSchema": { "type": "object" }, "annotations": { "readOnlyHint": true }, "icons": [{ "src": "x" }], "_meta": { "m": 1 } });
        assert_eq!(serde_json::to_value(serde_json::from_value::<Tool>(tool.clone()).unwrap()).unwrap(), tool);
    }
}
