import { escapeHtml, niceCeiling } from '../pageFormat.ts';

/**
 * The report's charts as inline SVG, drawn here rather than in the browser: the page runs no script and loads
 * nothing, so it passes a strict Content-Security-Policy and opens from a file. Pure: the same data gives the same
 * markup; every text is escaped. Colours come from the page's CSS classes; the heat map's shades are attributes.
 */

const WIDTH = 720;
const MARGIN = { right: 20, top: 16, bottom: 28 };
/** Width of a character of the 11 px axis text, generously, for the left margin to fit the y labels. */
const AXIS_CHAR = 6.5;

export interface Series {
  name: string;
  /** CSS class of the line (`s1`, `s2` …). */
  cls: string;
  /** One value per label; null leaves a gap. */
  values: Array<number | null>;
}

export interface LineChartInput {
  /** The x axis' categories, evenly spaced (days, weeks). */
  labels: string[];
  series: Series[];
  /** Text of an x label, e.g. `3 Nov` for `2026-11-03`. */
  labelText: (label: string) => string;
  /** Text of a y value, for the axis and the tooltips. */
  valueText: (value: number) => string;
  ariaLabel: string;
  /** Shown instead of the lines when no value at all is given. */
  empty: string;
  /** Fill the area under the first series. */
  area?: boolean;
  /** Of the viewBox: a chart for half the page's width is drawn narrower, so that its text keeps its size. */
  width?: number;
  height?: number;
}

/** A line chart with a shared y axis from 0; a tooltip (`<title>`) per x position lists every series' value. */
export function lineChart(c: LineChartInput): string {
  const width = c.width ?? WIDTH;
  const height = c.height ?? 220;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const values = c.series.flatMap((s) => s.values).filter((v): v is number => v !== null && Number.isFinite(v));
  const step = niceCeiling(Math.max(...values, 0) > 0 ? (Math.max(...values) * 1.1) / 4 : 1);
  const top = step * 4;
  const ticks = [0, 1, 2, 3, 4].map((i) => c.valueText(step * i));
  const left = Math.max(36, Math.ceil(Math.max(...ticks.map((t) => t.length)) * AXIS_CHAR) + 12);
  const plotW = width - left - MARGIN.right;
  const n = c.labels.length;
  const x = (i: number) => left + (n <= 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v: number) => MARGIN.top + plotH - (v / top) * plotH;
  const parts: string[] = [];

  ticks.forEach((tick, i) => {
    const at = y(step * i).toFixed(1);
    parts.push(`<line x1="${left}" x2="${width - MARGIN.right}" y1="${at}" y2="${at}" class="grid"/>`);
    parts.push(`<text x="${left - 6}" y="${at}" class="axis" text-anchor="end" dominant-baseline="middle">${escapeHtml(tick)}</text>`);
  });
  // About one x label per 90 units of width, the last one always; the last is aligned to the plot's right edge.
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(width / 90))));
  c.labels.forEach((label, i) => {
    if ((n - 1 - i) % every === 0) {
      const anchor = i === n - 1 && n > 1 ? 'end' : 'middle';
      const at = anchor === 'end' ? width - 2 : x(i);
      parts.push(`<text x="${at.toFixed(1)}" y="${height - 8}" class="axis" text-anchor="${anchor}">${escapeHtml(c.labelText(label))}</text>`);
    }
  });

  if (values.length === 0) {
    parts.push(`<text x="${left + plotW / 2}" y="${MARGIN.top + plotH / 2}" class="empty" text-anchor="middle">${escapeHtml(c.empty)}</text>`);
  } else {
    const first = c.series[0];
    if (c.area && first) {
      for (const run of runs(first.values)) {
        const points = run.map((i) => `${x(i).toFixed(1)},${y(first.values[i]!).toFixed(1)}`);
        const base = y(0).toFixed(1);
        parts.push(`<polygon class="area ${first.cls}" points="${x(run[0]!).toFixed(1)},${base} ${points.join(' ')} ${x(run.at(-1)!).toFixed(1)},${base}"/>`);
      }
    }
    for (const s of c.series) {
      for (const run of runs(s.values)) {
        if (run.length === 1) continue;
        parts.push(`<polyline class="line ${s.cls}" points="${run.map((i) => `${x(i).toFixed(1)},${y(s.values[i]!).toFixed(1)}`).join(' ')}"/>`);
      }
    }
    // One hover target per x position: a transparent column with the values of every series, and the points.
    const slot = n <= 1 ? plotW : plotW / (n - 1);
    c.labels.forEach((label, i) => {
      const tip = `${c.labelText(label)}: ${c.series.map((s) => `${s.name} ${s.values[i] === null ? '—' : c.valueText(s.values[i]!)}`).join(', ')}`;
      parts.push(`<g class="pt"><title>${escapeHtml(tip)}</title>`);
      parts.push(`<rect x="${(x(i) - slot / 2).toFixed(1)}" y="${MARGIN.top}" width="${slot.toFixed(1)}" height="${plotH}" class="hit"/>`);
      if (n <= 60) {
        for (const s of c.series) {
          const v = s.values[i];
          if (v !== null && v !== undefined) parts.push(`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" class="dot ${s.cls}"/>`);
        }
      }
      parts.push('</g>');
    });
  }
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(c.ariaLabel)}">${parts.join('')}</svg>`;
}

/** Runs of consecutive indexes whose value is a number. */
function runs(values: Array<number | null>): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) {
      if (current.length) out.push(current);
      current = [];
    } else current.push(i);
  });
  if (current.length) out.push(current);
  return out;
}

export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;

/**
 * A 7 × 24 heat map: one row per weekday (Monday first), one cell per hour, darker for more; the count in the cell
 * and in its tooltip.
 *
 * @param cells cells[weekday][hour], weekday 0 = Monday
 * @param noun what is counted, singular (`ticket`)
 */
export function heatMap(cells: number[][], noun: string, timeZone: string): string {
  const left = 40;
  const top = 20;
  const cellW = (WIDTH - left - 4) / 24;
  const cellH = 24;
  const height = top + 7 * cellH + 4;
  const max = Math.max(0, ...cells.flat());
  const parts: string[] = [];
  for (let h = 0; h < 24; h += 3) {
    parts.push(`<text x="${(left + h * cellW + cellW / 2).toFixed(1)}" y="${top - 6}" class="axis" text-anchor="middle">${String(h).padStart(2, '0')}:00</text>`);
  }
  cells.forEach((row, d) => {
    const y = top + d * cellH;
    parts.push(`<text x="${left - 6}" y="${(y + cellH / 2).toFixed(1)}" class="axis" text-anchor="end" dominant-baseline="middle">${WEEKDAYS[d]}</text>`);
    row.forEach((count, h) => {
      const x = left + h * cellW;
      const share = max === 0 ? 0 : count / max;
      const fill = count === 0 ? '#f1f3f5' : `hsl(217,72%,${(93 - share * 50).toFixed(0)}%)`;
      const label = `${WEEKDAYS[d]} ${String(h).padStart(2, '0')}:00–${String(h + 1).padStart(2, '0')}:00 ${timeZone}: ${count} ${noun}${count === 1 ? '' : 's'}`;
      parts.push(`<g><title>${escapeHtml(label)}</title><rect x="${(x + 1).toFixed(1)}" y="${y + 1}" width="${(cellW - 2).toFixed(1)}" height="${cellH - 2}" rx="3" fill="${fill}"/>`);
      if (count > 0) {
        parts.push(`<text x="${(x + cellW / 2).toFixed(1)}" y="${(y + cellH / 2).toFixed(1)}" class="cell${share > 0.55 ? ' dark' : ''}" text-anchor="middle" dominant-baseline="middle">${count}</text>`);
      }
      parts.push('</g>');
    });
  });
  const total = cells.flat().reduce((a, b) => a + b, 0);
  return `<svg class="chart" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escapeHtml(`${total} ${noun}s by weekday and hour`)}">${parts.join('')}</svg>`;
}
