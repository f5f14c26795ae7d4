// Word statistics for the word-count tool.
export function countWords(text, top) {
  const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
  const counts = new Map();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  const frequent = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, top);
  return {
    words: words.length,
    lines: text === "" ? 0 : text.split("\n").length,
    top: frequent.map(([word, count]) => ({ word, count })),
  };
}
