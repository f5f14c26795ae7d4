// `zhin.js` as codemode provides it (its plugin API is not a package a plugin installs
// here): `definePlugin` returns its argument unchanged; the plugin runtime calls its
// `setup(context)` when it loads the module (`plugin_formats.js`, zhin's Path Two).
export function definePlugin(definition) {
  return definition;
}
