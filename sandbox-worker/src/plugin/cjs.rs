//! The names a CommonJS module exports, found in its text the way Node's
//! `cjs-module-lexer` finds them, so that `import { parse } from "cjs-package"` works
//! as it does under Node.
//!
//! Read from the module's top-level statements (nothing runs):
//! - `exports.name = ...`, `module.exports.name = ...`, `exports["name"] = ...`;
//! - `Object.defineProperty(exports, "name", ...)` (and on `module.exports`);
//! - `module.exports = { a, b: ..., "c": ... }` (an object literal's keys);
//! - esbuild's hint `0 && (module.exports = { a, b })`;
//! - re-exports, whose own names are added by the loader: `module.exports =
//!   require("./x")`, `__exportStar(require("./x"), exports)` (TypeScript, tslib) and
//!   `__export(require("./x"))`.

use swc_common::sync::Lrc;
use swc_common::{FileName, SourceMap};
use swc_ecma_ast::{
    AssignTarget, Callee, EsVersion, Expr, Lit, MemberExpr, MemberProp, ModuleItem, Prop, PropName, PropOrSpread,
    SimpleAssignTarget, Stmt,
};
use swc_ecma_parser::{parse_file_as_program, EsSyntax, Syntax};

/// What a CommonJS module exports, as far as its text shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CjsExports {
    /// Names it exports itself.
    pub names: Vec<String>,
    /// Specifiers of modules whose exports it re-exports.
    pub reexports: Vec<String>,
}

/// The exports of the CommonJS module `source`; nothing when it does not parse (the
/// module then reports its own error when it runs).
pub fn exports_of(source: &str) -> CjsExports {
    if plugin_format::nesting::too_deep(source) {
        return CjsExports::default();
    }
    let map: Lrc<SourceMap> = Lrc::default();
    let file = map.new_source_file(Lrc::new(FileName::Anon), source.to_string());
    let mut recovered = Vec::new();
    let syntax = Syntax::Es(EsSyntax { allow_return_outside_function: true, ..EsSyntax::default() });
    let Ok(program) = parse_file_as_program(&file, syntax, EsVersion::latest(), None, &mut recovered) else {
        return CjsExports::default();
    };
    let statements: Vec<&Stmt> = match &program {
        swc_ecma_ast::Program::Script(script) => script.body.iter().collect(),
        swc_ecma_ast::Program::Module(module) => module
            .body
            .iter()
            .filter_map(|item| match item {
                ModuleItem::Stmt(s) => Some(s),
                ModuleItem::ModuleDecl(_) => None,
            })
            .collect(),
    };
    let mut found = CjsExports::default();
    for statement in statements {
        if let Stmt::Expr(e) = statement {
            found.expression(&e.expr);
        }
    }
    found.names.retain(|n| n != "default");
    found.names.sort();
    found.names.dedup();
    found.reexports.dedup();
    found
}

impl CjsExports {
    fn expression(&mut self, expr: &Expr) {
        match expr {
            Expr::Paren(p) => self.expression(&p.expr),
            Expr::Seq(s) => s.exprs.iter().for_each(|e| self.expression(e)),
            // esbuild: `0 && (module.exports = { ... })`, written for Node's lexer.
            Expr::Bin(b) if matches!(b.left.as_ref(), Expr::Lit(Lit::Num(n)) if n.value == 0.0) => {
                self.expression(&b.right)
            }
            Expr::Assign(a) => {
                let AssignTarget::Simple(SimpleAssignTarget::Member(target)) = &a.left else { return };
                if is_module_exports(target) {
                    self.module_exports(&a.right);
                } else if is_exports(&target.obj) {
                    if let Some(name) = prop_name(&target.prop) {
                        self.names.push(name);
                    }
                }
                self.expression(&a.right);
            }
            Expr::Call(call) => {
                let Callee::Expr(callee) = &call.callee else { return };
                let args: Vec<&Expr> = call.args.iter().map(|a| a.expr.as_ref()).collect();
                match callee_name(callee).as_deref() {
                    Some("defineProperty") if args.len() >= 2 && is_exports(args[0]) => {
                        if let Expr::Lit(Lit::Str(s)) = args[1] {
                            self.names.push(s.value.to_string_lossy().into_owned());
                        }
                    }
                    Some("__exportStar") if args.len() >= 2 && is_exports(args[1]) => self.reexport(args[0]),
                    Some("__export") if !args.is_empty() => self.reexport(args[0]),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// `module.exports = value`.
    fn module_exports(&mut self, value: &Expr) {
        match value {
            Expr::Object(object) => {
                for prop in &object.props {
                    let PropOrSpread::Prop(prop) = prop else { continue };
                    let key = match prop.as_ref() {
                        Prop::Shorthand(ident) => Some(ident.sym.to_string()),
                        Prop::KeyValue(kv) => key_name(&kv.key),
                        Prop::Method(m) => key_name(&m.key),
                        Prop::Getter(g) => key_name(&g.key),
                        _ => None,
                    };
                    self.names.extend(key);
                }
            }
            other => self.reexport(other),
        }
    }

    /// `require("x")` as a re-export.
    fn reexport(&mut self, value: &Expr) {
        if let Some(specifier) = required(value) {
            self.reexports.push(specifier);
        }
    }
}

/// The specifier of `require("x")`.
fn required(expr: &Expr) -> Option<String> {
    let Expr::Call(call) = expr else { return None };
    let Callee::Expr(callee) = &call.callee else { return None };
    let Expr::Ident(name) = callee.as_ref() else { return None };
    if name.sym != *"require" {
        return None;
    }
    match call.args.first().map(|a| a.expr.as_ref()) {
        Some(Expr::Lit(Lit::Str(s))) => Some(s.value.to_string_lossy().into_owned()),
        _ => None,
    }
}

/// `Object.defineProperty` → `defineProperty`; `tslib.__exportStar` → `__exportStar`.
fn callee_name(callee: &Expr) -> Option<String> {
    match callee {
        Expr::Ident(i) => Some(i.sym.to_string()),
        Expr::Member(m) => prop_name(&m.prop),
        // `(0, tslib.__exportStar)(...)`
        Expr::Paren(p) => match p.expr.as_ref() {
            Expr::Seq(s) => s.exprs.last().and_then(|e| callee_name(e)),
            other => callee_name(other),
        },
        _ => None,
    }
}

/// `exports` or `module.exports`.
fn is_exports(expr: &Expr) -> bool {
    match expr {
        Expr::Ident(i) => i.sym == *"exports",
        Expr::Member(m) => is_module_exports(m),
        _ => false,
    }
}

/// `module.exports`.
fn is_module_exports(member: &MemberExpr) -> bool {
    matches!(member.obj.as_ref(), Expr::Ident(i) if i.sym == *"module")
        && prop_name(&member.prop).as_deref() == Some("exports")
}

fn prop_name(prop: &MemberProp) -> Option<String> {
    match prop {
        MemberProp::Ident(i) => Some(i.sym.to_string()),
        MemberProp::Computed(c) => match c.expr.as_ref() {
            Expr::Lit(Lit::Str(s)) => Some(s.value.to_string_lossy().into_owned()),
            _ => None,
        },
        MemberProp::PrivateName(_) => None,
    }
}

fn key_name(key: &PropName) -> Option<String> {
    match key {
        PropName::Ident(i) => Some(i.sym.to_string()),
        PropName::Str(s) => Some(s.value.to_string_lossy().into_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(source: &str) -> Vec<String> {
        exports_of(source).names
    }

    #[test]
    fn assignments_and_define_property() {
        assert_eq!(
            names("exports.parse = parse; module.exports.valid = v; exports['weird-name'] = 1; Object.defineProperty(exports, '__esModule', { value: true }); exports.default = 3;"),
            ["__esModule", "parse", "valid", "weird-name"]
        );
    }

    #[test]
    fn object_literals_and_esbuild_hints() {
        assert_eq!(
            names("module.exports = { SemVer, parse: p, 'inc': i, get major() { return 1 } }"),
            ["SemVer", "inc", "major", "parse"]
        );
        assert_eq!(
            names("var x = {}; 0 && (module.exports = { alpha, beta });\nmodule.exports = __toCommonJS(x);"),
            ["alpha", "beta"]
        );
    }

    #[test]
    fn reexports_are_listed_by_specifier() {
        let found = exports_of("\"use strict\";\nvar tslib = require('tslib');\ntslib.__exportStar(require('./a'), exports);\n__exportStar(require(\"./b\"), exports);\n(0, tslib.__exportStar)(require('./c'), exports);");
        assert_eq!(found.reexports, ["./a", "./b", "./c"]);
        assert_eq!(exports_of("module.exports = require('./impl')").reexports, ["./impl"]);
    }

    #[test]
    fn text_that_does_not_parse_exports_nothing() {
        assert_eq!(exports_of("exports.a = ;"), CjsExports::default());
    }
}
