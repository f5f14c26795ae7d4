// `@zhin.js/tool` as codemode provides it (the package is not on any registry): the
// one function a zhin.js tool file calls. The definition is returned as written; the
// plugin runtime reads its fields when it loads `tools/<name>/index.ts`
// (`plugin_formats.js`, the zhin adapter).
export function defineAgentTool(definition) {
  return definition;
}
