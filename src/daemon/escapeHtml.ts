/** Text for HTML element content and quoted attribute values: error messages come from remote servers. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
