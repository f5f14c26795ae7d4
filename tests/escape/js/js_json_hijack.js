// attack: replace JSON.stringify and JSON.parse to corrupt what the host receives
// category: js/prototype pollution
// expect: kind=ok
// expect-value: "3"
JSON.stringify = () => "{\"a\": 999, \"b\": 999}";
JSON.parse = () => "forged";
return await tools.math.add({ a: 1, b: 2 });
