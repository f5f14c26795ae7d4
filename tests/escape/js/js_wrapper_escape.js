// attack: close the program's wrapper and throw a Symbol from top-level code while it is compiled
// category: js/hostile values
// expect: kind=error
}); throw Symbol("top level"); (async function () {
