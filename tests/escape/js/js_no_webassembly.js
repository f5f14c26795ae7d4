// attack: compile WebAssembly to grow memory or run native-speed loops
// category: js/modules
// expect: kind=ok
// expect-value: "undefined"
return typeof WebAssembly;
