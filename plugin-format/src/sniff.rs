//! A look at one module's top-level statements, without running it: does it
//! default-export something (a Podcode module), does it assign `globalThis.tools.<name>`
//! (a seed-003 script), and what network allowlist does its `globalThis.manifest`
//! declare, and which of the host's services its code reaches (the permissions a
//! seed-003 script derives: `host.workspace.write` derives `host:workspace:write`).
//!
//! The allowlist is read here, from the text, because the host enforces it: a list the
//! plugin's running code reported could be anything its code (or a compromised engine)
//! wanted. So `egress` must be written as a list of string literals.

use swc_common::sync::Lrc;
use swc_common::{FileName, SourceMap, Spanned};
use swc_ecma_ast::{
    AssignTarget, EsVersion, Expr, Lit, MemberExpr, MemberProp, ModuleDecl, ModuleExportName, ModuleItem, Prop,
    PropName, PropOrSpread, SimpleAssignTarget, Stmt,
};
use swc_ecma_parser::{parse_file_as_module, EsSyntax, Syntax, TsSyntax};
use swc_ecma_visit::{Visit, VisitWith};

/// The permission a script derives by reading `host.workspace.read` or `.list`.
pub const WORKSPACE_READ: &str = "host:workspace:read";
/// The permission a script derives by calling `host.workspace.write`, or by reaching
/// `host.workspace` in any way that is not a plain read or list.
pub const WORKSPACE_WRITE: &str = "host:workspace:write";

/// What a module's top level shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sniffed {
    /// It has `export default` (or `export { x as default }`).
    pub default_export: bool,
    /// It assigns `globalThis.tools.<name>` (or `tools.<name>`).
    pub assigns_tools: bool,
    /// `globalThis.manifest = { egress: [...] }`: the hosts, when the manifest is there.
    pub egress: Option<Vec<String>>,
    /// It imports `zhin.js` (whose `definePlugin` a zhin.js Path Two plugin
    /// default-exports), so a default export is a zhin.js plugin, not a Podcode one.
    pub imports_zhin: bool,
    /// The permissions its code derives ([`WORKSPACE_READ`], [`WORKSPACE_WRITE`]), in
    /// that order, anywhere in the module.
    pub permissions: Vec<String>,
}

/// A module that could not be read, with the position to look at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct SniffError {
    /// What is wrong.
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// Reads `text` (TypeScript when `typescript`) and reports its top level.
pub fn sniff(text: &str, typescript: bool) -> Result<Sniffed, SniffError> {
    if crate::nesting::too_deep(text) {
        return Err(SniffError {
            message: format!(
                "brackets nest more than {} levels deep; codemode does not read such a file to tell its format (set `format` and `path` to the module instead)",
                crate::nesting::MAX_NESTING
            ),
            line: 1,
            column: 1,
        });
    }
    let map: Lrc<SourceMap> = Lrc::default();
    let file = map.new_source_file(Lrc::new(FileName::Anon), text.to_string());
    let syntax = if typescript { Syntax::Typescript(TsSyntax::default()) } else { Syntax::Es(EsSyntax::default()) };
    let mut recovered = Vec::new();
    let position = |pos: swc_common::BytePos| {
        let loc = map.lookup_char_pos(pos);
        (u32::try_from(loc.line).unwrap_or(u32::MAX), u32::try_from(loc.col_display + 1).unwrap_or(u32::MAX))
    };
    let module = parse_file_as_module(&file, syntax, EsVersion::latest(), None, &mut recovered).map_err(|e| {
        let (line, column) = position(e.span().lo);
        SniffError { message: e.kind().msg().to_string(), line, column }
    })?;
    let mut found = Sniffed::default();
    let mut uses = WorkspaceUses::default();
    module.visit_with(&mut uses);
    found.permissions = uses.permissions();
    for item in &module.body {
        match item {
            ModuleItem::ModuleDecl(ModuleDecl::ExportDefaultExpr(_) | ModuleDecl::ExportDefaultDecl(_)) => {
                found.default_export = true;
            }
            ModuleItem::ModuleDecl(ModuleDecl::Import(import)) if import.src.value.to_string_lossy() == "zhin.js" => {
                found.imports_zhin = true;
            }
            ModuleItem::ModuleDecl(ModuleDecl::ExportNamed(named)) => {
                let names_default = named.specifiers.iter().any(|s| match s {
                    swc_ecma_ast::ExportSpecifier::Named(n) => {
                        matches!(&n.exported, Some(ModuleExportName::Ident(i)) if i.sym == *"default")
                    }
                    swc_ecma_ast::ExportSpecifier::Default(_) => true,
                    swc_ecma_ast::ExportSpecifier::Namespace(_) => false,
                });
                found.default_export |= names_default;
            }
            ModuleItem::Stmt(Stmt::Expr(statement)) => {
                for assignment in assignments(&statement.expr) {
                    let AssignTarget::Simple(SimpleAssignTarget::Member(target)) = &assignment.left else { continue };
                    if is_tools_entry(target) {
                        found.assigns_tools = true;
                    } else if is_global_member(target, "manifest") {
                        found.egress = Some(egress(&assignment.right).map_err(|message| {
                            let (line, column) = position(assignment.right.span().lo);
                            SniffError { message, line, column }
                        })?);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The assignments an expression statement makes: `a = b`, `(a = b)`, `a = b, c = d`.
fn assignments(expr: &Expr) -> Vec<&swc_ecma_ast::AssignExpr> {
    match expr {
        Expr::Assign(a) => vec![a],
        Expr::Paren(p) => assignments(&p.expr),
        Expr::Seq(s) => s.exprs.iter().flat_map(|e| assignments(e)).collect(),
        _ => Vec::new(),
    }
}

/// `globalThis.<name>` (or `window.<name>`/`self.<name>`, which are the same object).
fn is_global_member(member: &MemberExpr, name: &str) -> bool {
    let Expr::Ident(object) = member.obj.as_ref() else { return false };
    matches!(&*object.sym, "globalThis" | "self" | "window") && prop_name(&member.prop).as_deref() == Some(name)
}

/// `globalThis.tools.<name>`, `globalThis.tools["name"]` or `tools.<name>`.
fn is_tools_entry(member: &MemberExpr) -> bool {
    if prop_name(&member.prop).is_none() {
        return false;
    }
    match member.obj.as_ref() {
        Expr::Member(inner) => is_global_member(inner, "tools"),
        Expr::Ident(object) => object.sym == *"tools",
        _ => false,
    }
}

/// The name a member access reads, when it is written as a name or a string.
fn prop_name(prop: &MemberProp) -> Option<String> {
    match prop {
        MemberProp::Ident(ident) => Some(ident.sym.to_string()),
        MemberProp::Computed(computed) => match computed.expr.as_ref() {
            Expr::Lit(Lit::Str(s)) => Some(s.value.to_string_lossy().into_owned()),
            _ => None,
        },
        MemberProp::PrivateName(_) => None,
    }
}

/// How a module's code reaches seed 003's `host.workspace`.
#[derive(Default)]
struct WorkspaceUses {
    /// Every `host.workspace` (or `globalThis.host.workspace`) in the module.
    all: usize,
    /// Those read as `host.workspace.read` or `host.workspace.list`.
    reads: usize,
}

impl WorkspaceUses {
    /// Reading and listing derive the read permission; anything else (a write, or
    /// `host.workspace` passed around, where any method may be called) the write one.
    fn permissions(&self) -> Vec<String> {
        let mut derived = Vec::new();
        if self.all > 0 {
            derived.push(WORKSPACE_READ.to_string());
        }
        if self.all > self.reads {
            derived.push(WORKSPACE_WRITE.to_string());
        }
        derived
    }
}

impl Visit for WorkspaceUses {
    fn visit_member_expr(&mut self, member: &MemberExpr) {
        if is_host_workspace(member) {
            self.all += 1;
        } else if let Some(inner) = host_workspace_within(&member.obj) {
            if is_host_workspace(inner) && matches!(prop_name(&member.prop).as_deref(), Some("read" | "list")) {
                self.reads += 1;
            }
        }
        member.visit_children_with(self);
    }
}

/// `host.workspace` or `globalThis.host.workspace`.
fn is_host_workspace(member: &MemberExpr) -> bool {
    if prop_name(&member.prop).as_deref() != Some("workspace") {
        return false;
    }
    match member.obj.as_ref() {
        Expr::Ident(object) => object.sym == *"host",
        Expr::Member(inner) => is_global_member(inner, "host"),
        _ => false,
    }
}

/// The member expression under `(x)`, `x!` and `x as T`.
fn host_workspace_within(expr: &Expr) -> Option<&MemberExpr> {
    match expr {
        Expr::Member(member) => Some(member),
        Expr::Paren(p) => host_workspace_within(&p.expr),
        Expr::TsNonNull(n) => host_workspace_within(&n.expr),
        Expr::TsAs(a) => host_workspace_within(&a.expr),
        _ => None,
    }
}

/// The `egress` list of `globalThis.manifest = { egress: [...] }`.
fn egress(manifest: &Expr) -> Result<Vec<String>, String> {
    const WRITTEN: &str = "globalThis.manifest must be an object written in the file, with `egress` a list of host names in quotes (\"api.example.com\"): codemode reads the allowlist before the plugin runs";
    let manifest = match manifest {
        Expr::Paren(p) => p.expr.as_ref(),
        other => other,
    };
    let Expr::Object(object) = manifest else { return Err(WRITTEN.into()) };
    let mut hosts = Vec::new();
    for prop in &object.props {
        let PropOrSpread::Prop(prop) = prop else { return Err(WRITTEN.into()) };
        let Prop::KeyValue(kv) = prop.as_ref() else { continue };
        let key = match &kv.key {
            PropName::Ident(i) => i.sym.to_string(),
            PropName::Str(s) => s.value.to_string_lossy().into_owned(),
            _ => continue,
        };
        if key != "egress" {
            continue;
        }
        let Expr::Array(list) = kv.value.as_ref() else { return Err(WRITTEN.into()) };
        for element in &list.elems {
            match element.as_ref().map(|e| (e.spread.is_some(), e.expr.as_ref())) {
                Some((false, Expr::Lit(Lit::Str(s)))) => hosts.push(s.value.to_string_lossy().into_owned()),
                _ => return Err(WRITTEN.into()),
            }
        }
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_podcode_module_default_exports() {
        let s =
            sniff("import { z } from \"zod\"\nexport default { id: \"x\", server() { return {} } }\n", false).unwrap();
        assert_eq!(s, Sniffed { default_export: true, ..Sniffed::default() });
        let s = sniff("const plugin = { server: () => ({}) };\nexport { plugin as default };", true).unwrap();
        assert!(s.default_export);
    }

    #[test]
    fn a_zhin_plugin_imports_zhin_js() {
        let text = "import { definePlugin } from 'zhin.js';\nimport { defineAgentTool } from '@zhin.js/tool';\nexport default definePlugin({ name: 'lottery', async setup(context) {} });";
        let s = sniff(text, true).unwrap();
        assert_eq!(s, Sniffed { default_export: true, imports_zhin: true, ..Sniffed::default() });
        assert!(!sniff("import { z } from 'zod'\nexport default {}", false).unwrap().imports_zhin);
    }

    #[test]
    fn a_globals_script_assigns_tools_and_declares_its_egress() {
        let text = "globalThis.manifest = {\n  egress: [\"api.open-meteo.com\", 'example.org:8443'],\n};\nglobalThis.tools.get_forecast = { description: \"d\", handler: async (input: { a: number }) => 1 };\ntools[\"other\"] = {};";
        let s = sniff(text, true).unwrap();
        assert!(s.assigns_tools && !s.default_export);
        assert_eq!(s.egress, Some(vec!["api.open-meteo.com".to_string(), "example.org:8443".to_string()]));
        assert_eq!(sniff("globalThis.tools.x = {}", false).unwrap().egress, None);
        assert_eq!(sniff("globalThis.manifest = { name: 'n' }", false).unwrap().egress, Some(vec![]));
    }

    #[test]
    fn an_allowlist_that_is_not_written_out_is_refused_at_its_position() {
        let e = sniff("const hosts = ['a'];\nglobalThis.manifest = { egress: hosts };", false).unwrap_err();
        assert_eq!((e.line, e.column), (2, 23));
        assert!(e.message.contains("a list of host names in quotes"), "{e}");
        let e = sniff("globalThis.manifest = makeManifest();", false).unwrap_err();
        assert!(e.message.starts_with("globalThis.manifest must be an object written in the file"), "{e}");
    }

    #[test]
    fn a_script_derives_the_workspace_permissions_its_code_reaches() {
        // Seed 003's own `save_note`, unchanged.
        let save_note = r#"globalThis.tools.save_note = {
  description: "Save a short note into the agent's workspace under notes/.",
  parameters: {
    type: "object",
    properties: { title: { type: "string" }, text: { type: "string" } },
    required: ["title", "text"],
  },
  handler: async (input: { title: string; text: string }) => {
    const path = `notes/${input.title.replace(/[^a-z0-9-]+/gi, "-").toLowerCase()}.md`;
    await host.workspace!.write({ path, content: input.text });
    return { saved: path };
  },
};"#;
        assert_eq!(sniff(save_note, true).unwrap().permissions, [WORKSPACE_READ, WORKSPACE_WRITE]);
        let reads = "tools.a = { handler: async () => [await host.workspace.read({ path: 'a' }), await host.workspace?.list({})] };";
        assert_eq!(sniff(reads, false).unwrap().permissions, [WORKSPACE_READ]);
        // Reached in a way whose method cannot be told: it may write.
        let passed = "const ws = globalThis.host.workspace; tools.a = { handler: () => ws.read({ path: 'a' }) };";
        assert_eq!(sniff(passed, false).unwrap().permissions, [WORKSPACE_READ, WORKSPACE_WRITE]);
        let computed = "tools.a = { handler: () => host.workspace['wr' + 'ite']({ path: 'a', content: '' }) };";
        assert_eq!(sniff(computed, false).unwrap().permissions, [WORKSPACE_READ, WORKSPACE_WRITE]);
        assert!(sniff("tools.a = { handler: () => host.fetch({ url: 'x' }) };", false).unwrap().permissions.is_empty());
    }

    #[test]
    fn text_nested_too_deeply_is_refused_before_it_is_parsed() {
        let deep = format!("export default {}1{};", "[".repeat(20_000), "]".repeat(20_000));
        let e = sniff(&deep, false).unwrap_err();
        assert!(e.message.starts_with("brackets nest more than 500 levels deep"), "{e}");
    }

    #[test]
    fn a_module_that_does_not_parse_says_where() {
        let e = sniff("export default {\n  id: ,\n}", false).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }
}
