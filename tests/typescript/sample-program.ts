// A program an agent might write against the declarations of the example plugins
// (scripts/check-declarations.sh type-checks it with tsc --strict). The body is what the
// agent sends to `execute`; the wrapper only gives it the `tools` it is called with.
declare const tools: Tools;

async function program() {
  const [forecast, sum, greeting] = await Promise.all([
    tools.weather.forecast({ city: "Oslo" }),
    tools.math.add({ a: 1, b: 2 }),
    tools.hello.greet({ name: "Kari", language: "no" }),
  ]);
  const stats = await tools.hello["word-count"]({ text: "a b a", top: 2 });
  const top: string = stats.top[0].word;
  const notes = await tools["sqlite-notes"].query({ sql: "SELECT title FROM notes WHERE tag = ?", params: ["work"] });
  const titles = notes.rows.map((row) => String(row[0]));
  const words = await tools["py-tools"]["word-count"]({ text: titles.join(" ") });
  return { sky: forecast.sky, sum: Number(sum), greeting, top, words: words.words, titles };
}

// Mistakes the declarations must catch stay commented; uncomment one to see tsc fail:
// tools.hello.greet({ language: "no" });            // `name` is required
// tools.hello.greet({ name: "x", language: "de" }); // not one of "en" | "no"

export { program };
