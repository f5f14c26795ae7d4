// `convergence/effect` as codemode provides it (seed 000's Effect + zod variant): the
// `Tools` service and `runPlugin`, written over the plugin's own `effect` package
// (3.x or 4.x, whichever it installed; resolved from the plugin's folder).
//
// `runPlugin(program)` is the plugin's `activate(api)`: it runs `program` with `Tools`
// provided, whose `register(definition)` is an Effect that registers the tool through
// `api.tools.register` (which reads zod `input`/`output` and parses the input before
// `run` sees it). A tool's `run` may return an Effect, which runs with the call's
// signal, so a given-up call interrupts it.
import * as Context from "effect/Context";
import * as Effect from "effect/Effect";

const KEY = "convergence/effect/Tools";

/** The `Tools` service: `Context.Service` in effect 4, `Context.GenericTag` in effect 3. */
export const Tools = typeof Context.Service === "function" ? Context.Service(KEY) : Context.GenericTag(KEY);

function runResult(result, ctx) {
  return Effect.isEffect(result) ? Effect.runPromise(result, { signal: ctx.signal }) : result;
}

export function runPlugin(program) {
  return async function activate(api) {
    const tools = {
      register: (definition) =>
        Effect.sync(() => {
          const run = definition.run;
          if (typeof run !== "function") {
            throw new TypeError(`Tools.register: tool ${definition.name}: \`run\` must be a function (input, ctx) => Effect`);
          }
          return api.tools.register({ ...definition, run: (input, ctx) => runResult(run(input, ctx), ctx) });
        }),
    };
    await Effect.runPromise(Effect.provideService(program, Tools, tools));
  };
}
