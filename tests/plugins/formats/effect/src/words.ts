export function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}
