/**
 * Plotly renders a small HTML-like markup in titles, labels and hover text (`<b>`, `<br>`,
 * `<a href>`). Model outputs and questions are data, not markup: escape them before they reach a
 * figure, so that `<script>` shows as text. Plotly decodes `&lt;`, `&gt;`, `&amp;` and `&quot;`
 * back to characters when it draws.
 */
export function plotlyText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Shorten to `max` characters with an ellipsis (labels must stay readable). */
export function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

/** Escape and wrap into lines of about `width` characters joined by `<br>` (hover text). */
export function wrapForHover(text: string, width = 60, maxLines = 8): string {
  const words = text.replace(/\s+/g, ' ').trim().split(' ');
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  const shown = lines.slice(0, maxLines);
  if (lines.length > maxLines) shown[maxLines - 1] = `${shown[maxLines - 1]} …`;
  return shown.map(plotlyText).join('<br>');
}
