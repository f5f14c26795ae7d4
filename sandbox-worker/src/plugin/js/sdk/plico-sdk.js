// `@plico-ai/sdk` as codemode provides it (the package is not on any registry): plico's
// `defineTool` returns its argument unchanged (it exists for editor types); the plugin
// runtime reads the definition when it loads `tools/*.tool.ts` (`plugin_formats.js`,
// the plico adapter).
export function defineTool(definition) {
  return definition;
}
