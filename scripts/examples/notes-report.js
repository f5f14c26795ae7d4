// Use three plugins together: a SQLite database, a Python text tool and the weather.
const { rows } = await tools.sqlite_notes.query({ sql: "SELECT title, body FROM notes WHERE tag = ? ORDER BY id", params: ["work"] });
const counts = await Promise.all(rows.map(([title, body]) => tools["py-tools"]["word-count"]({ text: `${title} ${body}` })));
const slugs = await Promise.all(rows.map(([title]) => tools.py_tools.slugify({ title })));
console.log(`${rows.length} work notes`);
return { notes: slugs, words: counts.reduce((n, c) => n + c.words, 0), oslo: (await tools.weather.forecast({ city: "Oslo" })).sky };
