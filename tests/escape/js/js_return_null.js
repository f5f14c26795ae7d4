// attack: none: the returned null must read back as null, not undefined
// category: js/outcomes
// expect: kind=ok
// expect-value-text: null
return null;
