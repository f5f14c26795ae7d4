//! The one schema-to-TypeScript renderer: TypeScript declarations of the catalog's
//! tools, generated from their JSON Schemas, for the execute description
//! ([`declarations`]), `codemode tools --typescript` (the same) and `codemode tools`
//! ([`listing`]: each tool's call as the program writes it, with the same types).
//!
//! The MCP server hands the declarations to the agent, which writes its program against
//! them: an `interface Tools` with one member per plugin and one method per tool, so
//! that `declare const tools: Tools;` type-checks `await tools.<plugin>.<tool>(input)`
//! (the text passes `tsc --noEmit --strict`). The program reaches tools by plugin, so
//! names are the plugins' own, not [`Catalog::exposed_name`]'s prefixed ones. A tool
//! without an output schema resolves to its result's text, so it is declared
//! `Promise<string>`; the one exception (a result holding anything but text resolves
//! to its content list) is said once, in the header.
//!
//! How schemas become types:
//! - objects list their properties in schema order, `?` for the ones not `required`; an
//!   `additionalProperties` schema becomes an index signature `[key: string]: T`;
//! - arrays are `T[]`, `prefixItems` (or draft-4 `items: [...]`) tuples `[A, B, ...T[]]`;
//! - `enum` and `const` are literal unions, `anyOf`/`oneOf` unions, `allOf` an
//!   intersection, `type` arrays unions, `nullable` adds `| null`, integers are numbers;
//! - `$ref`s to `#/$defs/X` or `#/definitions/X` become named types `type X = ...` in a
//!   `declare namespace` per schema (`WeatherForecastInput.X`), so recursive schemas stay
//!   finite; a definition that refers to itself outside any object or array (which
//!   TypeScript refuses) is declared `unknown`;
//! - what cannot be expressed (`not`, `if`/`then`/`else`, a `$ref` elsewhere) is
//!   `unknown /* schema: ... */`, never an error;
//! - `description`s, the constraints a type cannot say (integer, ranges, lengths,
//!   `pattern`, `format`), `default`s and a first example become `/** */` doc comments,
//!   with `*/` escaped.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::tool::{Catalog, Tool};

/// Deeper schemas are written as `unknown`: guards the recursion on hand-built values.
const MAX_DEPTH: usize = 40;

/// Longest schema text kept in an `unknown /* schema: ... */` comment.
const MAX_SCHEMA_COMMENT: usize = 200;

/// Keywords that constrain values in ways no TypeScript type says; a schema made of
/// only these (and annotations) falls back to `unknown /* schema: ... */`.
const UNEXPRESSIBLE: [&str; 10] = [
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentSchemas",
    "contains",
    "propertyNames",
    "$dynamicRef",
    "$recursiveRef",
];

/// Keywords that carry a type, for telling an `anyOf` of types from an `anyOf` of
/// constraints (`[{ "required": ["a"] }, { "required": ["b"] }]`), which is left out.
const TYPE_KEYWORDS: [&str; 12] = [
    "type",
    "properties",
    "additionalProperties",
    "items",
    "prefixItems",
    "enum",
    "const",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "nullable",
];

/// Words that cannot name a type alias.
const RESERVED: &str = "any bigint boolean break case catch class const continue debugger default delete do else enum export extends false \
    finally for function if implements import in instanceof interface let never new null number object package private protected public \
    return static string super switch symbol this throw true try typeof undefined unknown var void";

/// What the declarations start with: the doc comment of `interface Tools`, and its first line.
const HEADER: &str = "\
/**
 * The tools a program calls as `await tools.<plugin>.<tool>(input)`.
 * A tool declared `Promise<string>` has no output schema: it resolves with its result's
 * text (`JSON.parse` it when it holds JSON). Any tool whose result holds something
 * other than text (an image, audio, a resource) resolves with its MCP content list
 * instead: an array of `{ type: \"text\", text }`, `{ type: \"image\", data, mimeType }` and so on.
 */
interface Tools {
";

/// The declarations of every tool in the catalog: `interface Tools { ... }`, then the
/// namespaces holding the named types of schemas with `$ref`s.
pub fn declarations(catalog: &Catalog) -> String {
    let mut out = String::from(HEADER);
    let mut namespaces = Namespaces::default();
    // Hidden tools are callable but not shown to the agent; a skill's or an agent's
    // tools are declared when the session loads it (`tools.$skills.load`).
    let plugins: Vec<(&str, Vec<&Tool>)> = catalog
        .plugins()
        .map(|(plugin, tools)| (plugin, tools.filter(|t| t.definition.is_public()).collect::<Vec<_>>()))
        .filter(|(_, tools)| !tools.is_empty())
        .collect();
    let plugin_names: Vec<&str> = plugins.iter().map(|(plugin, _)| *plugin).collect();
    for (plugin, tools) in &plugins {
        if let Some(alias) = alias(plugin, &plugin_names) {
            push_doc(&mut out, &[format!("Also reachable as `tools.{alias}`.")], 1);
        }
        out.push_str(&format!("  {}: {{\n", property_key(plugin)));
        let tool_names: Vec<&str> = tools.iter().map(|t| t.definition.name.as_str()).collect();
        for tool in tools {
            push_method(&mut out, plugin, tool, &tool_names, &mut namespaces);
        }
        out.push_str("  };\n");
    }
    out.push_str("}\n");
    for block in namespaces.blocks {
        out.push('\n');
        out.push_str(&block);
    }
    out
}

/// The TypeScript type of one schema, its lines indented `indent` levels (two spaces
/// each) after the first. `$ref`s are not followed here (they become
/// `unknown /* schema: ... */`): [`declarations`] declares them as named types.
pub fn schema_type(schema: &Value, indent: usize) -> String {
    Renderer::unresolved().ty(schema, indent, 0).text
}

/// One tool's method: its doc comment and `name(input: In): Promise<Out>;`.
fn push_method(out: &mut String, plugin: &str, tool: &Tool, siblings: &[&str], namespaces: &mut Namespaces) {
    let definition = &tool.definition;
    let mut doc = text_lines(&definition.description);
    if let Some(alias) = alias(&definition.name, siblings) {
        if !doc.is_empty() {
            doc.push(String::new());
        }
        doc.push(format!("Also reachable as `{alias}`."));
    }
    push_doc(out, &doc, 2);
    let (parameter, output) = signature_parts(plugin, tool, namespaces, 2);
    out.push_str(&format!("    {}({parameter}): Promise<{output}>;\n", property_key(&definition.name)));
}

/// A tool's parameter (`input: T` or `input?: T`) and output type, declaring the named
/// types of its schemas in `namespaces`; their inner lines are indented `indent` levels
/// (2 inside the `declare namespace` blocks, 0 in a flat listing).
fn signature_parts(plugin: &str, tool: &Tool, namespaces: &mut Namespaces, indent: usize) -> (String, String) {
    let definition = &tool.definition;
    let schema = &definition.input_schema;
    let mut input =
        Renderer::for_schema(schema, namespaces.free_name(&pascal_case(&[plugin, &definition.name, "Input"])));
    let input_type = if is_empty_object(schema) { "{}".to_string() } else { input.ty(schema, indent, 0).text };
    namespaces.add(input.namespace_block());
    // The worker sends `{}` for a missing input: fine when nothing is required.
    let requires_nothing = schema.get("required").and_then(Value::as_array).is_none_or(Vec::is_empty);
    let optional = is_empty_object(schema)
        || (requires_nothing && !["$ref", "anyOf", "oneOf", "allOf"].iter().any(|k| schema.get(*k).is_some()));
    let output_type = match &definition.output_schema {
        Some(schema) => {
            let mut output =
                Renderer::for_schema(schema, namespaces.free_name(&pascal_case(&[plugin, &definition.name, "Output"])));
            let text = output.ty(schema, indent, 0).text;
            namespaces.add(output.namespace_block());
            text
        }
        None => "string".to_string(),
    };
    (format!("input{}: {input_type}", if optional { "?" } else { "" }), output_type)
}

/// One tool's declaration as `tools.$search` hands it to a program: its doc comment,
/// `tools.<plugin>.<tool>(input: In): Promise<Out>;`, then the named types of its
/// schemas with `$ref`s.
pub fn tool_declaration(plugin: &str, tool: &Tool) -> String {
    let mut namespaces = Namespaces::default();
    let mut out = String::new();
    push_doc(&mut out, &text_lines(&tool.definition.description), 0);
    let (parameter, output) = signature_parts(plugin, tool, &mut namespaces, 0);
    out.push_str(&format!(
        "tools{}{}({parameter}): Promise<{output}>;\n",
        access_path(plugin),
        access_path(&tool.definition.name)
    ));
    for block in namespaces.blocks {
        out.push('\n');
        out.push_str(&block);
    }
    out
}

/// Every tool as the program calls it, with its types and the first line of its
/// description (for `codemode tools`), then the named types of schemas with `$ref`s.
pub fn listing(catalog: &Catalog) -> String {
    let mut out = String::new();
    let mut namespaces = Namespaces::default();
    for (plugin, tools) in catalog.plugins() {
        let access = access_path(plugin);
        for tool in tools {
            let (parameter, output) = signature_parts(plugin, tool, &mut namespaces, 0);
            let method = access_path(&tool.definition.name);
            let owner = tool.definition.owner.as_deref().map(|o| {
                format!("  // private to {}: shown once a session loads it", protocol::skills::describe_owner(o))
            });
            let hidden = if tool.definition.hidden { "  // hidden: callable, but not shown to agents" } else { "" };
            let hidden = owner.as_deref().unwrap_or(hidden);
            out.push_str(&format!("tools{access}{method}({parameter}): Promise<{output}>{hidden}\n"));
            if let Some(first) = tool.definition.description.lines().next().filter(|l| !l.trim().is_empty()) {
                out.push_str(&format!("    {}\n", first.trim()));
            }
        }
    }
    for block in namespaces.blocks {
        out.push('\n');
        out.push_str(&block);
    }
    out
}

/// `.name`; for a name that is not an identifier, its `_` alias (`.py_tools` for
/// `py-tools`, which the program's `tools` answers to), or `["name"]` when even that is
/// not one.
pub fn access_path(name: &str) -> String {
    let alias: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect();
    let key = property_key(&alias);
    if key.starts_with('"') {
        format!("[{}]", property_key(name))
    } else {
        format!(".{key}")
    }
}

/// An object schema with nothing in it: the input of a tool that takes none.
fn is_empty_object(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else { return false };
    let no_properties = map.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty);
    let no_index = !map.get("additionalProperties").is_some_and(Value::is_object);
    no_properties && no_index && !["$ref", "anyOf", "oneOf", "allOf"].iter().any(|k| map.contains_key(*k))
}

/// The `_` name the worker also answers to for a name with `-` (see the worker's
/// bootstrap), unless a sibling already has that name.
fn alias(name: &str, siblings: &[&str]) -> Option<String> {
    let alias: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect();
    (alias != name && !siblings.contains(&alias.as_str())).then_some(alias)
}

/// The namespace blocks written after `interface Tools`, and their names.
#[derive(Default)]
struct Namespaces {
    names: BTreeSet<String>,
    blocks: Vec<String>,
}

impl Namespaces {
    /// `base`, or `base2`, `base3`...: the first name not taken (nor `Tools`).
    fn free_name(&self, base: &str) -> String {
        let taken = |name: &str| name == "Tools" || self.names.contains(name);
        (1..)
            .map(|n| if n == 1 { base.to_string() } else { format!("{base}{n}") })
            .find(|name| !taken(name))
            .unwrap_or_default()
    }

    fn add(&mut self, block: Option<(String, String)>) {
        if let Some((name, block)) = block {
            self.names.insert(name);
            self.blocks.push(block);
        }
    }
}

/// `["my-db", "search_rows", "Input"]` → `MyDbSearchRowsInput`.
fn pascal_case(parts: &[&str]) -> String {
    let mut name = String::new();
    for word in parts.iter().flat_map(|p| p.split(|c: char| !c.is_ascii_alphanumeric())) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            name.push(first.to_ascii_uppercase());
            name.extend(chars);
        }
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// How tightly a type binds, for parentheses: `(A | B)[]`, `(A | B) & C`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Binding {
    Union,
    Intersection,
    /// A negative number literal: fine in unions and intersections, not before `[]`.
    Prefixed,
    Primary,
}

/// A written type and how tightly it binds.
struct Ty {
    text: String,
    binding: Binding,
}

impl Ty {
    fn primary(text: impl Into<String>) -> Self {
        Self { text: text.into(), binding: Binding::Primary }
    }

    /// The text, in parentheses when it binds looser than `at_least`.
    fn wrapped(self, at_least: Binding) -> String {
        if self.binding < at_least {
            format!("({})", self.text)
        } else {
            self.text
        }
    }

    /// `A | B | ...` without repeats; `never` for none.
    fn union(members: Vec<Ty>) -> Ty {
        let mut kept: Vec<Ty> = Vec::new();
        for member in members {
            if !kept.iter().any(|k| k.text == member.text) {
                kept.push(member);
            }
        }
        match kept.len() {
            0 => Ty::primary("never"),
            1 => kept.remove(0),
            _ => Ty { text: kept.into_iter().map(|m| m.text).collect::<Vec<_>>().join(" | "), binding: Binding::Union },
        }
    }

    /// `A & B & ...`; `unknown` for none.
    fn intersection(mut members: Vec<Ty>) -> Ty {
        match members.len() {
            0 => Ty::primary("unknown"),
            1 => members.remove(0),
            _ => Ty {
                text: members.into_iter().map(|m| m.wrapped(Binding::Intersection)).collect::<Vec<_>>().join(" & "),
                binding: Binding::Intersection,
            },
        }
    }
}

/// Writes types for the schemas of one root schema, naming its `$defs`.
struct Renderer<'a> {
    /// The schema `$ref`s resolve against; none: they are not followed.
    root: Option<&'a Value>,
    /// The namespace the named types go into.
    namespace: String,
    /// Each resolvable `$ref` (`#/$defs/X`) with its type name, in schema order.
    names: Vec<(String, String)>,
    /// The `$ref`s written so far, so their types get declared.
    used: BTreeSet<String>,
}

impl<'a> Renderer<'a> {
    fn unresolved() -> Self {
        Self { root: None, namespace: String::new(), names: Vec::new(), used: BTreeSet::new() }
    }

    /// A renderer for `root`, naming its definitions in `namespace`.
    fn for_schema(root: &'a Value, namespace: String) -> Self {
        let mut names: Vec<(String, String)> = Vec::new();
        for container in ["$defs", "definitions"] {
            let Some(defs) = root.get(container).and_then(Value::as_object) else { continue };
            for name in defs.keys() {
                let escaped = name.replace('~', "~0").replace('/', "~1");
                let mut type_name = identifier(name);
                let base = type_name.clone();
                let mut n = 1;
                while names.iter().any(|(_, t)| *t == type_name) {
                    n += 1;
                    type_name = format!("{base}{n}");
                }
                names.push((format!("#/{container}/{escaped}"), type_name));
            }
        }
        Self { root: Some(root), namespace, names, used: BTreeSet::new() }
    }

    /// The `$ref`'s type name (recording it as used), when it points at a definition.
    fn reference(&mut self, reference: &str) -> Option<String> {
        self.root?;
        let (_, name) = self.names.iter().find(|(r, _)| r == reference)?;
        let qualified = format!("{}.{name}", self.namespace);
        self.used.insert(reference.to_string());
        Some(qualified)
    }

    /// The schema a resolvable `$ref` points at.
    fn target(&self, reference: &str) -> Option<&'a Value> {
        let rest = reference.strip_prefix("#/")?;
        let (container, name) = rest.split_once('/')?;
        if name.contains('/') {
            return None;
        }
        self.root?.get(container)?.get(name.replace("~1", "/").replace("~0", "~"))
    }

    /// The namespace declaring every definition the written types use, with its name;
    /// none when they use none.
    fn namespace_block(&mut self) -> Option<(String, String)> {
        if self.used.is_empty() {
            return None;
        }
        // Declaring a definition can use others: write until no new one shows up.
        let mut written: BTreeMap<String, String> = BTreeMap::new();
        while let Some(reference) = self.used.iter().find(|r| !written.contains_key(*r)).cloned() {
            let Some(target) = self.target(&reference) else {
                written.insert(reference, String::new());
                continue;
            };
            let declared = if self.directly_circular(&reference) {
                format!("unknown /* circular $ref: {} */", escape_comment(&reference))
            } else {
                self.ty(target, 1, 0).text
            };
            let mut text = String::new();
            push_doc(&mut text, &doc_lines(target), 1);
            let name = self.names.iter().find(|(r, _)| *r == reference).map(|(_, n)| n.clone()).unwrap_or_default();
            text.push_str(&format!("  type {name} = {declared};\n"));
            written.insert(reference, text);
        }
        let mut block = format!("declare namespace {} {{\n", self.namespace);
        for (reference, _) in &self.names {
            if let Some(text) = written.get(reference) {
                block.push_str(text);
            }
        }
        block.push_str("}\n");
        Some((self.namespace.clone(), block))
    }

    /// True when the definition reaches itself through `$ref`s alone, outside any object
    /// or array (`type A = B | string; type B = A`), which TypeScript refuses.
    fn directly_circular(&self, reference: &str) -> bool {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut pending: Vec<String> = self.target(reference).map(direct_refs).unwrap_or_default();
        while let Some(next) = pending.pop() {
            if next == reference {
                return true;
            }
            if seen.insert(next.clone()) {
                pending.extend(self.target(&next).map(direct_refs).unwrap_or_default());
            }
        }
        false
    }

    /// The type of `schema`, its lines after the first indented `indent` levels.
    fn ty(&mut self, schema: &Value, indent: usize, depth: usize) -> Ty {
        let map = match schema {
            Value::Bool(true) => return Ty::primary("unknown"),
            Value::Bool(false) => return Ty::primary("never"),
            Value::Object(map) => map,
            _ => return fallback(schema),
        };
        if depth > MAX_DEPTH {
            return Ty::primary("unknown /* schema nested too deeply */");
        }
        let mut parts: Vec<Ty> = Vec::new();
        if let Some(reference) = map.get("$ref") {
            match reference.as_str().and_then(|r| self.reference(r)) {
                Some(name) => parts.push(Ty::primary(name)),
                None => return fallback(schema),
            }
        }
        if let Some(value) = map.get("const") {
            parts.push(literal(value));
        } else if let Some(values) = map.get("enum").and_then(Value::as_array) {
            parts.push(Ty::union(values.iter().map(literal).collect()));
        } else if let Some(ty) = self.typed(map, indent, depth) {
            parts.push(ty);
        }
        // `{ "type": "object", "anyOf": [...] }`: the members say it all.
        let combined = ["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|k| map.get(*k).and_then(Value::as_array).is_some_and(|m| m.iter().any(has_type)));
        if combined && is_bare_container(map) {
            parts.clear();
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(members) = map.get(key).and_then(Value::as_array).filter(|m| m.iter().any(has_type)) {
                let members = members.iter().map(|m| self.ty(m, indent, depth + 1)).collect();
                parts.push(Ty::union(members));
            }
        }
        if let Some(members) = map.get("allOf").and_then(Value::as_array) {
            for member in members.iter().filter(|m| has_type(m)) {
                parts.push(self.ty(member, indent, depth + 1));
            }
        }
        if parts.is_empty() {
            return if UNEXPRESSIBLE.iter().any(|k| map.contains_key(*k)) {
                fallback(schema)
            } else {
                Ty::primary("unknown")
            };
        }
        let ty = Ty::intersection(parts);
        if map.get("nullable") == Some(&Value::Bool(true)) && ty.text != "null" {
            return Ty::union(vec![ty, Ty::primary("null")]);
        }
        ty
    }

    /// The type `type` names (or `properties` and `items` imply); none without either.
    fn typed(&mut self, map: &Map<String, Value>, indent: usize, depth: usize) -> Option<Ty> {
        match map.get("type") {
            Some(Value::String(name)) => Some(self.named_type(name, map, indent, depth)),
            Some(Value::Array(names)) => {
                let members = names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|name| self.named_type(name, map, indent, depth))
                    .collect();
                Some(Ty::union(members))
            }
            _ if map.contains_key("properties") || map.contains_key("additionalProperties") => {
                Some(self.object_type(map, indent, depth))
            }
            _ if map.contains_key("items") || map.contains_key("prefixItems") => {
                Some(self.array_type(map, indent, depth))
            }
            _ => None,
        }
    }

    fn named_type(&mut self, name: &str, map: &Map<String, Value>, indent: usize, depth: usize) -> Ty {
        match name {
            "string" => Ty::primary("string"),
            "number" | "integer" => Ty::primary("number"),
            "boolean" => Ty::primary("boolean"),
            "null" => Ty::primary("null"),
            "array" => self.array_type(map, indent, depth),
            "object" => self.object_type(map, indent, depth),
            _ => Ty::primary("unknown"),
        }
    }

    /// `{ name: T; other?: U; [key: string]: V }`, one member a line.
    fn object_type(&mut self, map: &Map<String, Value>, indent: usize, depth: usize) -> Ty {
        let empty = Map::new();
        let properties = map.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let index = match map.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(schema @ Value::Object(_)) => Some(self.ty(schema, indent + 1, depth + 1)),
            _ if properties.is_empty() => Some(Ty::primary("unknown")),
            _ => None,
        };
        if properties.is_empty() {
            return match index {
                None => Ty::primary("{}"),
                Some(index) if !index.text.contains('\n') => {
                    Ty::primary(format!("{{ [key: string]: {} }}", index.text))
                }
                Some(index) => {
                    Ty::primary(format!("{{\n{}[key: string]: {};\n{}}}", pad(indent + 1), index.text, pad(indent)))
                }
            };
        }
        let mut text = String::from("{\n");
        let mut all_match_index = true;
        for (name, schema) in properties {
            let is_required = required.contains(&name.as_str());
            push_doc(&mut text, &doc_lines(schema), indent + 1);
            let ty = self.ty(schema, indent + 1, depth + 1);
            all_match_index &= is_required && index.as_ref().is_some_and(|i| i.text == ty.text);
            text.push_str(&format!(
                "{}{}{}: {};\n",
                pad(indent + 1),
                property_key(name),
                if is_required { "" } else { "?" },
                ty.text
            ));
        }
        if let Some(index) = index {
            // Every property must fit the index signature: `unknown` unless they all do.
            let index = if all_match_index { index.text } else { "unknown".to_string() };
            text.push_str(&format!("{}[key: string]: {index};\n", pad(indent + 1)));
        }
        text.push_str(&pad(indent));
        text.push('}');
        Ty::primary(text)
    }

    /// `T[]`, or a tuple `[A, B, ...T[]]` for `prefixItems` (and draft-4 `items: [...]`).
    fn array_type(&mut self, map: &Map<String, Value>, indent: usize, depth: usize) -> Ty {
        let (prefix, rest) = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
            (_, Some(Value::Array(prefix))) => (Some(prefix), map.get("additionalItems")),
            (_, items) => (None, items),
        };
        let Some(prefix) = prefix else {
            let item = match rest {
                Some(schema) => self.ty(schema, indent, depth + 1),
                None => Ty::primary("unknown"),
            };
            return Ty::primary(format!("{}[]", item.wrapped(Binding::Primary)));
        };
        let mut members: Vec<String> = prefix.iter().map(|s| self.ty(s, indent, depth + 1).text).collect();
        match rest {
            Some(Value::Bool(false)) => {}
            Some(schema) => {
                members.push(format!("...{}[]", self.ty(schema, indent, depth + 1).wrapped(Binding::Primary)))
            }
            None => members.push("...unknown[]".to_string()),
        }
        Ty::primary(format!("[{}]", members.join(", ")))
    }
}

/// The `$ref`s a schema is made of outside any object or array.
fn direct_refs(schema: &Value) -> Vec<String> {
    let mut refs = Vec::new();
    let mut pending = vec![schema];
    while let Some(schema) = pending.pop() {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            refs.push(reference.to_string());
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            pending.extend(schema.get(key).and_then(Value::as_array).into_iter().flatten());
        }
    }
    refs
}

/// `{ "type": "object" }` or `{ "type": "array" }` with nothing about members or items.
fn is_bare_container(map: &Map<String, Value>) -> bool {
    matches!(map.get("type").and_then(Value::as_str), Some("object" | "array"))
        && !["properties", "additionalProperties", "items", "prefixItems", "$ref", "const", "enum"]
            .iter()
            .any(|k| map.contains_key(*k))
}

/// True when the schema says something about the type of its values.
fn has_type(schema: &Value) -> bool {
    match schema {
        Value::Bool(_) => true,
        Value::Object(map) => TYPE_KEYWORDS.iter().any(|k| map.contains_key(*k)),
        _ => false,
    }
}

/// A JSON value as a literal type: `"a"`, `3`, `null`, `{"a":1}`.
fn literal(value: &Value) -> Ty {
    let text = value.to_string();
    let binding = if text.starts_with('-') { Binding::Prefixed } else { Binding::Primary };
    Ty { text, binding }
}

/// `unknown`, with the schema it stands for in a comment.
fn fallback(schema: &Value) -> Ty {
    let mut text = escape_comment(&schema.to_string());
    if text.len() > MAX_SCHEMA_COMMENT {
        let end = (0..=MAX_SCHEMA_COMMENT).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        text.truncate(end);
        text.push('…');
    }
    Ty::primary(format!("unknown /* schema: {text} */"))
}

/// Text safe inside a comment: `*/` would end it.
fn escape_comment(text: &str) -> String {
    text.replace("*/", "*\\/")
}

/// A property name as TypeScript takes it: bare when it is an identifier, else quoted.
pub fn property_key(name: &str) -> String {
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_string()
    } else {
        Value::String(name.to_string()).to_string()
    }
}

/// A definition's name as a type name: other characters become `_`, reserved words get
/// a `_` after them.
fn identifier(name: &str) -> String {
    let mut id: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    if RESERVED.split_whitespace().any(|word| word == id) {
        id.push('_');
    }
    id
}

/// A schema's doc lines: its description, then what its type cannot say (constraints),
/// its default and its first example.
fn doc_lines(schema: &Value) -> Vec<String> {
    let mut lines = schema.get("description").and_then(Value::as_str).map(text_lines).unwrap_or_default();
    let mut facts: Vec<String> = constraints(schema).into_iter().collect();
    if let Some(default) = schema.get("default") {
        facts.push(format!("Default: `{}`.", escape_comment(&default.to_string())));
    }
    if let Some(example) = schema.get("examples").and_then(Value::as_array).and_then(|e| e.first()) {
        let text = example.to_string();
        if text.len() <= MAX_EXAMPLE_CHARS {
            facts.push(format!("Example: `{}`.", escape_comment(&text)));
        }
    }
    if !facts.is_empty() {
        lines.push(facts.join(" "));
    }
    lines
}

/// Longest example quoted in a doc comment.
const MAX_EXAMPLE_CHARS: usize = 80;

/// The constraints of a schema that its TypeScript type drops, as one sentence:
/// `Integer, 1 to 10.`, `At most 100 characters, pattern `^[a-z]+$`.`; `None` when it
/// has none. A call that breaks one is refused with the field's name, so the agent
/// should know them before it calls.
fn constraints(schema: &Value) -> Option<String> {
    let map = schema.as_object()?;
    let number = |key: &str| map.get(key).filter(|v| v.is_number()).map(Value::to_string);
    let count = |key: &str| map.get(key).and_then(Value::as_u64);
    let mut parts: Vec<String> = Vec::new();
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"integer") && !types.contains(&"number") {
        parts.push("integer".into());
    }
    let (low, high) = (number("minimum"), number("maximum"));
    match (&low, &high) {
        (Some(low), Some(high)) => parts.push(format!("{low} to {high}")),
        (Some(low), None) => parts.push(format!("at least {low}")),
        (None, Some(high)) => parts.push(format!("at most {high}")),
        (None, None) => {}
    }
    if let Some(low) = number("exclusiveMinimum") {
        parts.push(format!("more than {low}"));
    }
    if let Some(high) = number("exclusiveMaximum") {
        parts.push(format!("less than {high}"));
    }
    if let Some(step) = number("multipleOf") {
        parts.push(format!("a multiple of {step}"));
    }
    // `unit` is singular and plural: ("character", "characters").
    let mut range = |min: Option<u64>, max: Option<u64>, (one, many): (&str, &str)| {
        let unit = |n: u64| if n == 1 { one } else { many };
        match (min, max) {
            (Some(a), Some(b)) if a == b => parts.push(format!("exactly {a} {}", unit(a))),
            (Some(a), Some(b)) => parts.push(format!("{a} to {b} {many}")),
            (Some(a), None) if a > 0 => parts.push(format!("at least {a} {}", unit(a))),
            (_, Some(b)) => parts.push(format!("at most {b} {}", unit(b))),
            _ => {}
        }
    };
    range(count("minLength"), count("maxLength"), ("character", "characters"));
    range(count("minItems"), count("maxItems"), ("item", "items"));
    range(count("minProperties"), count("maxProperties"), ("property", "properties"));
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        parts.push("no duplicates".into());
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        parts.push(format!("format {format}"));
    }
    if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
        parts.push(format!("pattern `{}`", escape_comment(pattern)));
    }
    if map.get("deprecated") == Some(&Value::Bool(true)) {
        parts.push("deprecated".into());
    }
    let mut sentence = parts.join(", ");
    let first = sentence.chars().next()?;
    sentence.replace_range(..first.len_utf8(), &first.to_uppercase().to_string());
    sentence.push('.');
    Some(sentence)
}

/// A text's lines, trimmed at the ends, with runs of blank lines made one.
fn text_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for line in text.trim().lines() {
        let line = line.trim_end();
        if line.is_empty() && lines.last().is_some_and(String::is_empty) {
            continue;
        }
        lines.push(line.to_string());
    }
    lines
}

/// Writes a `/** */` doc comment: one line when it fits on one.
fn push_doc(out: &mut String, lines: &[String], indent: usize) {
    let pad = pad(indent);
    match lines {
        [] => {}
        [line] => out.push_str(&format!("{pad}/** {} */\n", escape_comment(line))),
        _ => {
            out.push_str(&format!("{pad}/**\n"));
            for line in lines {
                if line.is_empty() {
                    out.push_str(&format!("{pad} *\n"));
                } else {
                    out.push_str(&format!("{pad} * {}\n", escape_comment(line)));
                }
            }
            out.push_str(&format!("{pad} */\n"));
        }
    }
}

fn pad(indent: usize) -> String {
    "  ".repeat(indent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolDefinition, ToolResult};
    use serde_json::json;

    fn tool(name: &str, description: &str, input: Value, output: Option<Value>) -> Tool {
        let definition = ToolDefinition { output_schema: output, ..ToolDefinition::new(name, description, input) };
        Tool::from_fn(definition, |_, _| async { ToolResult::text("x") })
    }

    fn representative_catalog() -> Catalog {
        let forecast = tool(
            "forecast",
            "Returns the forecast for `city` over `days` days.\n\n\n\nMade-up data */ for tests.",
            json!({
                "type": "object",
                "properties": {
                    "city": { "type": "string", "description": "City name", "format": "city", "examples": ["Oslo", "Rome"] },
                    "days": { "type": "integer", "minimum": 1, "default": 3 },
                    "units": { "enum": ["c", "f"] }
                },
                "required": ["city"]
            }),
            Some(json!({
                "type": "object",
                "properties": {
                    "city": { "type": "string" },
                    "days": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": { "high": { "type": "number" }, "low": { "type": "number" }, "sky": { "type": ["string", "null"] } },
                            "required": ["high", "low"]
                        }
                    }
                },
                "required": ["city", "days"]
            })),
        );
        let search = tool(
            "search-rows",
            "Searches rows.",
            json!({
                "type": "object",
                "properties": {
                    "table name": { "type": "string", "maxLength": 64, "pattern": "^[a-z_]+$" },
                    "filter": { "anyOf": [{ "type": "string" }, { "type": "object", "additionalProperties": { "type": "number" } }] },
                    "limit": { "type": "integer", "nullable": true, "minimum": 1, "maximum": 100 },
                    "pair": { "type": "array", "prefixItems": [{ "type": "string" }, { "type": "number" }], "items": false },
                    "mode": { "const": "fast" },
                    "tags": { "type": "array", "maxItems": 5, "uniqueItems": true, "items": { "oneOf": [{ "type": "string" }, { "type": "number" }] } },
                    "offsets": { "type": "array", "items": { "enum": [-1, 0, 1] } }
                },
                "required": ["table name"]
            }),
            None,
        );
        let tree = tool(
            "tree",
            "Walks a tree.",
            json!({
                "type": "object",
                "properties": { "root": { "$ref": "#/$defs/Node" } },
                "required": ["root"],
                "$defs": {
                    "Node": {
                        "type": "object",
                        "description": "A tree node.",
                        "properties": { "value": { "type": "string" }, "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } } },
                        "required": ["value"]
                    },
                    "Unused": { "type": "string" }
                }
            }),
            Some(json!({
                "type": "object",
                "properties": {
                    "weird": { "not": { "type": "string" } },
                    "cond": { "if": { "type": "string" }, "then": { "minLength": 2 } },
                    "both": { "allOf": [{ "$ref": "#/definitions/A" }, { "type": "object", "properties": { "b": { "type": "number" } } }] }
                },
                "definitions": { "A": { "type": "object", "properties": { "a": { "type": "string" } } } }
            })),
        );
        let ping = tool("ping", "Checks the database is up.", json!({ "type": "object", "properties": {} }), None);
        Catalog::new()
            .with("weather", forecast)
            .unwrap()
            .with("my-db", search)
            .unwrap()
            .with("my-db", tree)
            .unwrap()
            .with("my-db", ping)
            .unwrap()
    }

    #[test]
    fn a_representative_catalog() {
        let expected = r##"/**
 * The tools a program calls as `await tools.<plugin>.<tool>(input)`.
 * A tool declared `Promise<string>` has no output schema: it resolves with its result's
 * text (`JSON.parse` it when it holds JSON). Any tool whose result holds something
 * other than text (an image, audio, a resource) resolves with its MCP content list
 * instead: an array of `{ type: "text", text }`, `{ type: "image", data, mimeType }` and so on.
 */
interface Tools {
  /** Also reachable as `tools.my_db`. */
  "my-db": {
    /** Checks the database is up. */
    ping(input?: {}): Promise<string>;
    /**
     * Searches rows.
     *
     * Also reachable as `search_rows`.
     */
    "search-rows"(input: {
      /** At most 64 characters, pattern `^[a-z_]+$`. */
      "table name": string;
      filter?: string | { [key: string]: number };
      /** Integer, 1 to 100. */
      limit?: number | null;
      pair?: [string, number];
      mode?: "fast";
      /** At most 5 items, no duplicates. */
      tags?: (string | number)[];
      offsets?: (-1 | 0 | 1)[];
    }): Promise<string>;
    /** Walks a tree. */
    tree(input: {
      root: MyDbTreeInput.Node;
    }): Promise<{
      weird?: unknown /* schema: {"not":{"type":"string"}} */;
      cond?: unknown /* schema: {"if":{"type":"string"},"then":{"minLength":2}} */;
      both?: MyDbTreeOutput.A & {
        b?: number;
      };
    }>;
  };
  weather: {
    /**
     * Returns the forecast for `city` over `days` days.
     *
     * Made-up data *\/ for tests.
     */
    forecast(input: {
      /**
       * City name
       * Format city. Example: `"Oslo"`.
       */
      city: string;
      /** Integer, at least 1. Default: `3`. */
      days?: number;
      units?: "c" | "f";
    }): Promise<{
      city: string;
      days: {
        high: number;
        low: number;
        sky?: string | null;
      }[];
    }>;
  };
}

declare namespace MyDbTreeInput {
  /** A tree node. */
  type Node = {
    value: string;
    children?: MyDbTreeInput.Node[];
  };
}

declare namespace MyDbTreeOutput {
  type A = {
    a?: string;
  };
}
"##;
        assert_eq!(declarations(&representative_catalog()), expected);
    }

    fn edge_catalog() -> Catalog {
        let odd = tool(
            "a-1",
            "Odd schemas.",
            json!({
                "type": "object",
                "properties": {
                    "class": { "$ref": "#/$defs/class" },
                    "loop": { "$ref": "#/$defs/Loop" },
                    "x.y": { "$ref": "#/$defs/x.y" },
                    "slash": { "$ref": "#/$defs/a~1b" },
                    "lit": { "enum": [{ "k": 1 }, [1, 2], null, true, 2.5, "q\"uote"] },
                    "none": { "enum": [] },
                    "tuple": { "type": "array", "prefixItems": [{ "type": "string" }], "items": { "type": "number" } },
                    "open": { "type": "array", "prefixItems": [{ "type": "boolean" }] },
                    "mixed": { "type": ["object", "null"], "properties": { "a": { "type": "string" } }, "required": ["a"] },
                    "indexed": { "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"], "additionalProperties": { "type": "string" } },
                    "indexed2": { "type": "object", "properties": { "a": { "type": "number" } }, "additionalProperties": { "type": "string" } },
                    "deep": { "type": "object", "additionalProperties": { "type": "object", "properties": { "z": { "type": "boolean" } } } },
                    "never": false,
                    "any": true,
                    "plain": { "description": "Anything at all." },
                    "choice": { "type": "object", "properties": { "a": { "type": "string" } }, "anyOf": [{ "required": ["a"] }, { "required": ["b"] }] },
                    "multi": { "description": "Line one.\nLine two */ end." }
                },
                "required": ["class"],
                "$defs": {
                    "class": { "type": "string" },
                    "Loop": { "anyOf": [{ "$ref": "#/$defs/Loop2" }, { "type": "string" }] },
                    "Loop2": { "$ref": "#/$defs/Loop" },
                    "x.y": { "type": "number" },
                    "a/b": { "type": "boolean" }
                }
            }),
            Some(json!({ "type": "object", "properties": { "self": { "$ref": "#" } } })),
        );
        let either = tool(
            "get-x",
            "Gets an x by id or name.",
            json!({
                "type": "object",
                "anyOf": [
                    { "properties": { "id": { "type": "string" } }, "required": ["id"] },
                    { "properties": { "name": { "type": "string" } }, "required": ["name"] }
                ]
            }),
            None,
        );
        let other = tool(
            "get_x",
            "Gets x.",
            json!({ "type": "object" }),
            Some(json!({ "type": "object", "properties": { "n": { "type": "integer" } } })),
        );
        let codes =
            tool("codes", "Codes.", json!({ "type": "object", "properties": { "n": { "type": "integer" } } }), None);
        Catalog::new()
            .with("edge", odd)
            .unwrap()
            .with("edge", either)
            .unwrap()
            .with("edge", other)
            .unwrap()
            .with("2fa", codes)
            .unwrap()
    }

    #[test]
    fn edge_cases() {
        let expected = r##"/**
 * The tools a program calls as `await tools.<plugin>.<tool>(input)`.
 * A tool declared `Promise<string>` has no output schema: it resolves with its result's
 * text (`JSON.parse` it when it holds JSON). Any tool whose result holds something
 * other than text (an image, audio, a resource) resolves with its MCP content list
 * instead: an array of `{ type: "text", text }`, `{ type: "image", data, mimeType }` and so on.
 */
interface Tools {
  "2fa": {
    /** Codes. */
    codes(input?: {
      /** Integer. */
      n?: number;
    }): Promise<string>;
  };
  edge: {
    /**
     * Odd schemas.
     *
     * Also reachable as `a_1`.
     */
    "a-1"(input: {
      class: EdgeA1Input.class_;
      loop?: EdgeA1Input.Loop;
      "x.y"?: EdgeA1Input.x_y;
      slash?: EdgeA1Input.a_b;
      lit?: {"k":1} | [1,2] | null | true | 2.5 | "q\"uote";
      none?: never;
      tuple?: [string, ...number[]];
      open?: [boolean, ...unknown[]];
      mixed?: {
        a: string;
      } | null;
      indexed?: {
        a: string;
        [key: string]: string;
      };
      indexed2?: {
        a?: number;
        [key: string]: unknown;
      };
      deep?: {
        [key: string]: {
          z?: boolean;
        };
      };
      never?: never;
      any?: unknown;
      /** Anything at all. */
      plain?: unknown;
      choice?: {
        a?: string;
      };
      /**
       * Line one.
       * Line two *\/ end.
       */
      multi?: unknown;
    }): Promise<{
      self?: unknown /* schema: {"$ref":"#"} */;
    }>;
    /** Gets an x by id or name. */
    "get-x"(input: {
      id: string;
    } | {
      name: string;
    }): Promise<string>;
    /** Gets x. */
    get_x(input?: {}): Promise<{
      /** Integer. */
      n?: number;
    }>;
  };
}

declare namespace EdgeA1Input {
  type class_ = string;
  type Loop = unknown /* circular $ref: #/$defs/Loop */;
  type x_y = number;
  type a_b = boolean;
}
"##;
        assert_eq!(declarations(&edge_catalog()), expected);
    }

    #[test]
    fn schema_types_on_their_own() {
        assert_eq!(schema_type(&json!({ "type": "integer" }), 0), "number");
        assert_eq!(schema_type(&json!({ "type": ["string", "integer", "number"] }), 0), "string | number");
        assert_eq!(schema_type(&json!({ "type": "array" }), 0), "unknown[]");
        assert_eq!(
            schema_type(&json!({ "type": "array", "items": { "type": "array", "items": { "type": "boolean" } } }), 0),
            "boolean[][]"
        );
        assert_eq!(schema_type(&json!({ "type": "object" }), 0), "{ [key: string]: unknown }");
        assert_eq!(schema_type(&json!({ "type": "object", "additionalProperties": false }), 0), "{}");
        assert_eq!(schema_type(&json!({ "enum": ["a", 1, null] }), 0), r#""a" | 1 | null"#);
        assert_eq!(schema_type(&json!({ "const": -1 }), 0), "-1");
        assert_eq!(schema_type(&json!({ "anyOf": [{ "type": "string" }, { "type": "string" }] }), 0), "string");
        assert_eq!(
            schema_type(
                &json!({ "allOf": [{ "anyOf": [{ "type": "string" }, { "type": "number" }] }, { "enum": ["a"] }] }),
                0
            ),
            r#"(string | number) & "a""#
        );
        assert_eq!(schema_type(&json!({ "type": "string", "nullable": true }), 0), "string | null");
        assert_eq!(schema_type(&json!({ "items": [{ "type": "string" }], "additionalItems": false }), 0), "[string]");
        assert_eq!(schema_type(&json!({ "type": "array", "items": { "enum": [-2] } }), 0), "(-2)[]");
        assert_eq!(schema_type(&json!({ "description": "only words", "format": "date" }), 0), "unknown");
        assert_eq!(schema_type(&json!(false), 0), "never");
        assert_eq!(schema_type(&json!(7), 0), "unknown /* schema: 7 */");
        assert_eq!(
            schema_type(
                &json!({ "type": "object", "properties": { "a b": { "type": "object", "properties": { "c": { "type": "string" } } } } }),
                1
            ),
            "{\n    \"a b\"?: {\n      c?: string;\n    };\n  }"
        );
    }

    #[test]
    fn what_cannot_be_expressed_is_unknown_with_its_schema() {
        // Without `declarations`, and for a `$ref` to anything but `$defs`/`definitions`.
        assert_eq!(
            schema_type(&json!({ "$ref": "#/$defs/A", "$defs": { "A": {} } }), 0),
            r##"unknown /* schema: {"$ref":"#/$defs/A","$defs":{"A":{}}} */"##
        );
        let root = json!({});
        let mut renderer = Renderer::for_schema(&root, "N".into());
        assert_eq!(
            renderer.ty(&json!({ "$ref": "https://example.com/a.json" }), 0, 0).text,
            r#"unknown /* schema: {"$ref":"https://example.com/a.json"} */"#
        );
        assert_eq!(renderer.namespace_block(), None);
        assert_eq!(
            schema_type(&json!({ "not": { "const": "*/" } }), 0),
            r#"unknown /* schema: {"not":{"const":"*\/"}} */"#
        );
        let long = schema_type(&json!({ "not": { "enum": ["x".repeat(500)] } }), 0);
        assert!(
            long.starts_with(r#"unknown /* schema: {"not":{"enum":["xxx"#)
                && long.ends_with("x… */")
                && long.len() < 250,
            "{long}"
        );
        let mut deep = json!({ "type": "string" });
        for _ in 0..200 {
            deep = json!({ "type": "array", "items": deep });
        }
        let text = schema_type(&deep, 0);
        assert!(text.starts_with("unknown /* schema nested too deeply */[]") && text.ends_with("[][]"), "{text}");
    }

    #[test]
    fn recursion_through_objects_and_arrays_is_named_and_direct_recursion_is_unknown() {
        let root = json!({
            "$defs": {
                "List": { "type": "array", "items": { "$ref": "#/$defs/List" } },
                "Self": { "allOf": [{ "$ref": "#/$defs/Self" }, { "type": "object" }] },
                "Uses": { "type": "object", "properties": { "l": { "$ref": "#/$defs/List" }, "s": { "$ref": "#/$defs/Self" } } }
            }
        });
        let mut renderer = Renderer::for_schema(&root, "T".into());
        assert_eq!(renderer.ty(&json!({ "$ref": "#/$defs/Uses" }), 0, 0).text, "T.Uses");
        let (name, block) = renderer.namespace_block().unwrap();
        assert_eq!(name, "T");
        let expected = "declare namespace T {\n  type List = T.List[];\n  type Self = unknown /* circular $ref: #/$defs/Self */;\n  type Uses = {\n    l?: T.List;\n    s?: T.Self;\n  };\n}\n";
        assert_eq!(block, expected);
    }

    #[test]
    fn names_are_quoted_and_namespaces_unique() {
        assert_eq!(property_key("ok_$1"), "ok_$1");
        assert_eq!(property_key("get-x"), r#""get-x""#);
        assert_eq!(property_key("1st"), r#""1st""#);
        assert_eq!(property_key(""), r#""""#);
        assert_eq!(property_key("é"), r#""é""#);
        assert_eq!(identifier("string"), "string_");
        assert_eq!(identifier("9lives"), "_9lives");
        assert_eq!(pascal_case(&["my-db", "search_rows", "Input"]), "MyDbSearchRowsInput");
        let mut namespaces = Namespaces::default();
        assert_eq!(namespaces.free_name("Tools"), "Tools2");
        namespaces.add(Some(("ABInput".into(), String::new())));
        assert_eq!(namespaces.free_name("ABInput"), "ABInput2");
        assert_eq!(alias("get-x", &["get-x"]), Some("get_x".into()));
        assert_eq!(alias("get-x", &["get-x", "get_x"]), None);
        assert_eq!(alias("get_x", &["get_x"]), None);
    }

    #[test]
    fn two_hundred_fifty_tools_make_250_methods_and_stay_tidy() {
        let mut catalog = Catalog::new();
        for i in 0..250 {
            let input = match i % 3 {
                0 => json!({ "type": "object" }),
                1 => {
                    json!({ "type": "object", "properties": { "id": { "type": "string", "description": "The id." } }, "required": ["id"] })
                }
                _ => {
                    json!({ "type": "object", "properties": { "q": { "type": "array", "items": { "type": "string" } } } })
                }
            };
            let output =
                (i % 5 == 0).then(|| json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } }));
            catalog
                .add(
                    &format!("plugin-{}", i % 12),
                    tool(&format!("tool-{i}"), &format!("Tool number {i}.\nSecond line."), input, output),
                )
                .unwrap();
        }
        let text = declarations(&catalog);
        let methods = text.lines().filter(|l| l.starts_with("    \"tool-") && l.contains("(input")).count();
        assert_eq!(methods, 250);
        assert!(!text.contains("\n\n"), "no blank lines");
        assert!(text.lines().all(|l| (l.len() - l.trim_start().len()) % 2 == 0
            || l.starts_with(" *")
            || l.trim_start().starts_with('*')));
        assert!(text.lines().all(|l| l == l.trim_end()), "no trailing spaces");
        assert_eq!(text.matches("interface Tools {").count(), 1);
        assert_eq!(text.lines().filter(|l| l.starts_with("  \"plugin-")).count(), 12);
    }
}
