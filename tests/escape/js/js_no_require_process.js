// attack: reach require, process, fetch, setTimeout
// category: js/modules
// expect: kind=ok
// expect-value: ["undefined","undefined","undefined","undefined","undefined"]
return [typeof require, typeof process, typeof fetch, typeof setTimeout, typeof XMLHttpRequest];
