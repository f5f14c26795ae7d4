// attack: Error.prepareStackTrace / captureStackTrace to get call-site objects of the host (vm2-style)
// category: js/host objects
// expect: kind=ok
// expect-value: "no host objects"
const seen = [];
Error.prepareStackTrace = (e, frames) => { for (const f of frames) { try { seen.push(f.getThis(), f.getFunction()); } catch {} } return "x"; };
try { await tools.math.add({ a: 1, b: "boom" }); } catch (e) { void e.stack; }
void new Error("probe").stack;
const leaked = seen.filter((v) => v && (typeof v === "object" || typeof v === "function") && ("core" in v || "ops" in v || String(v).includes("op_")));
return leaked.length ? leaked.map(String) : "no host objects";
