// attack: load a module with import()
// category: js/modules
// expect: kind=error
await import("data:text/javascript,export default 1");
