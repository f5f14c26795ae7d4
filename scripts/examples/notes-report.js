// Use four plugins together: a SQLite database, a Python text tool, a JavaScript plugin
// and the weather.
const { rows } = await tools.sqlite_notes.query({ sql: "SELECT title, body FROM notes WHERE tag = ? ORDER BY id", params: ["work"] });
const counts = await Promise.all(rows.map(([title, body]) => tools["py-tools"]["word-count"]({ text: `${title} ${body}` })));
const slugs = await Promise.all(rows.map(([title]) => tools.py_tools.slugify({ title })));
const stats = await tools.hello.word_count({ text: rows.map(([title, body]) => `${title} ${body}`).join("\n"), top: 1 });
console.log(`${rows.length} work notes`);
return {
  greeting: await tools.hello.greet({ name: "team", language: "no" }),
  notes: slugs,
  words: counts.reduce((n, c) => n + c.words, 0),
  top: stats.top[0].word,
  oslo: (await tools.weather.forecast({ city: "Oslo" })).sky,
};
