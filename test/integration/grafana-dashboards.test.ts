import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseBusinessHours } from '../../src/config/reportSettings.ts';
import { sql, type Tx } from '../../src/db/connect.ts';
import { writeReportSettings } from '../../src/db/repos/reportSettings.ts';
import { DaemonMetrics } from '../../src/daemon/metrics.ts';
import { DEFAULT_REPORT_SETTINGS } from '../../src/model/reportSettings.ts';
import { mirrorStatus } from '../../src/sync/status.ts';
import { DAY_MS, HOUR_MS } from '../../src/time.ts';
import { backends, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { expandGrafanaSql, exposedSeries, GRAFANA_DIR, promqlNames, readDashboard, type Dashboard, type Panel } from '../helpers/grafana.ts';
import { mirrorHelpdesk } from '../helpers/helpdeskMirror.ts';

/**
 * The Grafana kit (grafana/): the dashboards' structure and provisioning; every PromQL expression of the operations
 * dashboard against the series a real daemon's /metrics exports; every SQL query of the support dashboard, its
 * macros expanded as Grafana does, against a mirror on both backends — it runs, returns rows and the columns its panel
 * uses — and on PostgreSQL as the read-only role grafana/grafana-reader.sql creates.
 */

const operations = readDashboard('operations');
const support = readDashboard('support');
const datasourcesYaml = readFileSync(resolve(GRAFANA_DIR, 'provisioning/datasources/ticket-mirror.yml'), 'utf8');
const providerYaml = readFileSync(resolve(GRAFANA_DIR, 'provisioning/dashboards/ticket-mirror.yml'), 'utf8');
const compose = readFileSync(resolve(GRAFANA_DIR, '../docker-compose.yml'), 'utf8');

/** uid → type of every provisioned data source. */
function provisionedDatasources(): Map<string, string> {
  const found = new Map<string, string>();
  for (const block of datasourcesYaml.split(/\n\s*- name: /).slice(1)) {
    const uid = /\n\s*uid: (\S+)/.exec(block)?.[1];
    const type = /\n\s*type: (\S+)/.exec(block)?.[1];
    if (uid && type) found.set(uid, type);
  }
  return found;
}

const targetsOf = (d: Dashboard) => d.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p, target: t })));

describe('the Grafana dashboards and their provisioning', () => {
  it.each([operations, support])('$title: unique ids, a 24-column grid without overlaps, provisioned data sources', (d) => {
    const datasources = provisionedDatasources();
    expect([...datasources.keys()].sort()).toEqual(['ticket-mirror-postgres', 'ticket-mirror-prometheus']);
    expect(new Set(d.panels.map((p) => p.id)).size).toBe(d.panels.length);
    const cells = new Set<string>();
    for (const p of d.panels) {
      const g = p.gridPos;
      expect(g.x + g.w, p.title).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`), `${p.title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
      }
      for (const ref of [p.datasource, ...(p.targets ?? []).map((t) => t.datasource)]) {
        expect(ref, p.title).toBeDefined();
        expect(datasources.get(ref!.uid), p.title).toBe(ref!.type);
      }
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
  });

  it('the provider loads the folder compose mounts, and compose provisions both, with Prometheus scraping the daemon', () => {
    const path = /path: (\S+)/.exec(providerYaml)?.[1];
    expect(compose).toContain(`./grafana/dashboards:${path}:ro`);
    expect(compose).toContain('./grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(compose).toContain(`GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH: ${path}/support.json`);
    expect(readFileSync(resolve(GRAFANA_DIR, 'prometheus.yml'), 'utf8')).toContain('targets: ["ticket-mirror:9464"]');
    // Every ${VAR} the data sources read is set for the grafana service.
    for (const [, name] of datasourcesYaml.matchAll(/\$\{(\w+)\}/g)) expect(compose).toMatch(new RegExp(`\\n\\s+${name}: `));
    expect(operations.panels.length + support.panels.length).toBe(32);
  });
});

describe('PromQL of the operations dashboard', () => {
  it('promqlNames finds series and labels, not functions, keywords, ranges or numbers', () => {
    expect(
      promqlNames('histogram_quantile(0.95, sum by (le) (rate(a_bucket{job="x", status!~"2.."}[$__rate_interval]))) / on (job) b_total offset 5m > bool 1e3'),
    ).toEqual({ metrics: ['a_bucket', 'b_total'], labels: ['job', 'status', 'le'] });
    expect(promqlNames('time() - max(c_seconds)')).toEqual({ metrics: ['c_seconds'], labels: [] });
  });

  it('names only series that a daemon’s /metrics exports, with labels those series carry', async () => {
    const database = await backends[0]!.open();
    try {
      const metrics = new DaemonMetrics({ backend: database.kind });
      const { end } = await mirrorHelpdesk(database, { hours: 2, onEngine: (engine) => metrics.observe(engine) });
      metrics.update(await mirrorStatus(database.db, { dailyLimit: 1440, minuteLimit: 60, reserve: 0.1 }, end), true);
      const exposed = exposedSeries(await metrics.text());
      expect(exposed.get('ticket_mirror_api_requests_total')).toEqual(new Set(['kind', 'status']));

      const targets = targetsOf(operations);
      expect(targets.length).toBeGreaterThanOrEqual(20);
      for (const { panel, target } of targets) {
        const { metrics: names, labels } = promqlNames(target.expr!);
        expect(names.length, `${panel.title}: ${target.expr}`).toBeGreaterThan(0);
        // Prometheus adds job and instance to every series it scrapes.
        const carried = new Set(['job', 'instance', ...names.flatMap((n) => [...(exposed.get(n) ?? [])])]);
        for (const name of names) expect(exposed.has(name), `${panel.title}: ${name} is not exported`).toBe(true);
        for (const label of labels) expect(carried.has(label), `${panel.title}: no series of ${target.expr} has ${label}`).toBe(true);
      }
    } finally {
      await database.destroy();
    }
  }, 120_000);
});

/** Column names and whether each is a number, a text or an instant, as the driver reports them. */
async function run(db: Tx, text: string): Promise<{ rows: unknown[]; columns: Map<string, 'number' | 'text' | 'time' | 'other'> }> {
  const result = (await db.execute(sql.raw(text))) as unknown as { rows: unknown[]; fields: Array<{ name: string; dataTypeID: number }> };
  const kind = (oid: number) =>
    [20, 21, 23, 700, 701, 1700].includes(oid) ? 'number' : [25, 1043].includes(oid) ? 'text' : [1082, 1114, 1184].includes(oid) ? 'time' : 'other';
  return { rows: result.rows, columns: new Map(result.fields.map((f) => [f.name, kind(f.dataTypeID)] as const)) };
}

/** The columns a panel's configuration names: overrides by name and a bar chart's x field. */
function columnsUsed(panel: Panel): string[] {
  const named = (panel.fieldConfig?.overrides ?? []).filter((o) => o.matcher.id === 'byName').map((o) => o.matcher.options);
  return [...named, ...(panel.options?.xField ? [panel.options.xField] : [])];
}

function checkColumns(panel: Panel, format: string | undefined, columns: Map<string, string>): void {
  const where = `${panel.title}: columns ${[...columns.keys()].join(', ')}`;
  for (const name of columnsUsed(panel)) expect(columns.has(name), where).toBe(true);
  if (format === 'time_series') {
    // Grafana's time series format: a column named time (an instant or epoch seconds), numbers, and a text `metric`.
    expect(['time', 'number'], where).toContain(columns.get('time'));
    for (const [name, kind] of columns) if (name !== 'time') expect(name === 'metric' ? 'text' : 'number', `${where} (${name})`).toBe(kind);
  } else {
    expect([...columns.values()], where).toContain('number');
  }
}

describe.each(backends)('SQL of the support dashboard on $name', ({ name, open }) => {
  let database: TestDatabase;
  let range: { from: Date; to: Date };
  beforeAll(async () => {
    database = await open();
    const { end } = await mirrorHelpdesk(database, { hours: 30, stepMs: 10 * 60_000 });
    // As a person looking a minute after the last sync, at 30 days from a whole hour (the heat map counts whole hours).
    range = { from: new Date(Math.floor((end - 30 * DAY_MS) / HOUR_MS) * HOUR_MS), to: new Date(end + 60_000) };
    // Business hours and SLA targets, so that every business and SLA column has values and sla_breaches rows.
    await writeReportSettings(database.db, {
      ...DEFAULT_REPORT_SETTINGS,
      timeZone: 'Europe/Berlin',
      businessHours: 'Mon-Fri 09:00-17:00',
      businessWindows: parseBusinessHours('Mon-Fri 09:00-17:00'),
      slaFirstResponseSeconds: 3600,
      slaResolutionSeconds: 86_400,
    });
  }, 240_000);
  afterAll(() => database?.destroy());

  it('every query runs with its macros expanded, returns rows and the columns its panel uses', async () => {
    const targets = targetsOf(support);
    expect(targets.length).toBe(support.panels.length);
    for (const { panel, target } of targets) {
      const text = expandGrafanaSql(target.rawSql!, range);
      expect(text, panel.title).not.toContain('$');
      const { rows, columns } = await run(database.db, text);
      expect(rows.length, `${panel.title} returned nothing`).toBeGreaterThan(0);
      checkColumns(panel, target.format, columns);
    }
  });

  it('the load heat map has a row per weekday and a column per hour, and its cells add up to the tickets created', async () => {
    const heat = support.panels.find((p) => p.title === 'New tickets by hour of the week')!;
    const { rows, columns } = await run(database.db, expandGrafanaSql(heat.targets![0]!.rawSql!, range));
    expect([...columns.keys()]).toEqual(['day', ...Array.from({ length: 24 }, (_, h) => String(h).padStart(2, '0'))]);
    expect(rows.map((r) => (r as { day: string }).day)).toEqual(['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']);
    const cells = rows.flatMap((r) => Object.entries(r as Record<string, unknown>).filter(([k]) => k !== 'day').map(([, v]) => Number(v)));
    const created = await run(database.db, expandGrafanaSql('SELECT count(*) AS n FROM tickets_current WHERE $__timeFilter(created_at)', range));
    expect(cells.reduce((a, b) => a + b, 0)).toBe(Number((created.rows[0] as { n: unknown }).n));
  });

  it.runIf(name === 'postgres' && spawnSync('psql', ['--version']).status === 0)(
    'grafana-reader.sql makes a role that runs every query and may write nothing',
    async () => {
      const reader = `tm_grafana_${randomBytes(4).toString('hex')}`;
      const password = randomBytes(12).toString('hex');
      execFileSync('psql', [postgresUrl!, '-q', '-v', `reader=${reader}`, '-v', `schema=${database.schema}`, '-f', resolve(GRAFANA_DIR, 'grafana-reader.sql')], {
        env: { ...process.env, GRAFANA_DB_PASSWORD: password },
        stdio: 'pipe',
      });
      const url = new URL(postgresUrl!);
      url.username = reader;
      url.password = password;
      // No search_path of ours: the role's own (set by the script) must find the views, as in Grafana.
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      try {
        for (const { panel, target } of targetsOf(support)) {
          const result = await client.query(expandGrafanaSql(target.rawSql!, range));
          expect(result.rows.length, panel.title).toBeGreaterThan(0);
        }
        await expect(client.query(`insert into reply_outbox (ticket_id, message) values ('x', 'hello')`)).rejects.toThrow(/permission denied/);
        await expect(client.query('delete from tickets')).rejects.toThrow(/permission denied/);
      } finally {
        await client.end();
        const admin = new pg.Client({ connectionString: postgresUrl! });
        await admin.connect();
        await admin.query(`drop owned by ${reader}; drop role ${reader}`);
        await admin.end();
      }
    },
  );
});
