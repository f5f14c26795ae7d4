export function shorten(url: string): string {
  let hash = 0;
  for (const c of url) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return `https://s.example/${hash.toString(36)}`;
}
