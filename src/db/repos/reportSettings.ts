import { ConfigError } from '../../errors.ts';
import type { ReportSettings } from '../../model/reportSettings.ts';
import { queryRows, sql, type Tx } from '../connect.ts';

/**
 * The one row of `report_settings`, from the daemon's configuration: written by every migrate (connect.ts), read by the
 * BI views. A row that already says the same is left alone, so `updated_at` tells when the settings last changed.
 *
 * The time zone was checked against Intl when the configuration was parsed; PostgreSQL has a time zone database of
 * its own, which must know the name too, or every view would fail: that is checked here, before anything is written.
 */
export async function writeReportSettings(tx: Tx, s: ReportSettings): Promise<void> {
  const [known] = await queryRows<{ known: boolean }>(
    tx,
    sql`select exists (select 1 from pg_timezone_names where name = ${s.timeZone}) as known`,
  );
  if (!known?.known) {
    throw new ConfigError([`REPORT_TIMEZONE=${JSON.stringify(s.timeZone)} is not a time zone this PostgreSQL knows (see pg_timezone_names)`]);
  }
  await tx.execute(sql`
    insert into report_settings as r (id, time_zone, business_hours, business_windows, sla_first_response_seconds,
      sla_resolution_seconds, updated_at)
    values (true, ${s.timeZone}, ${s.businessHours}, ${s.businessWindows === null ? null : JSON.stringify(s.businessWindows)}::jsonb,
      ${s.slaFirstResponseSeconds}, ${s.slaResolutionSeconds}, now())
    on conflict (id) do update set
      time_zone = excluded.time_zone, business_hours = excluded.business_hours, business_windows = excluded.business_windows,
      sla_first_response_seconds = excluded.sla_first_response_seconds, sla_resolution_seconds = excluded.sla_resolution_seconds,
      updated_at = excluded.updated_at
    where (r.time_zone, r.business_hours, r.business_windows, r.sla_first_response_seconds, r.sla_resolution_seconds)
      is distinct from (excluded.time_zone, excluded.business_hours, excluded.business_windows,
        excluded.sla_first_response_seconds, excluded.sla_resolution_seconds)`);
}

/** The row as stored, in the configuration's shape; the defaults when the row is missing. */
export async function readReportSettings(tx: Tx): Promise<ReportSettings & { updatedAt: string | null }> {
  const [row] = await queryRows<{
    time_zone: string;
    business_hours: string | null;
    business_windows: ReportSettings['businessWindows'];
    sla_first_response_seconds: number | null;
    sla_resolution_seconds: number | null;
    updated_at: string;
  }>(tx, sql`select time_zone, business_hours, business_windows, sla_first_response_seconds, sla_resolution_seconds,
      to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as updated_at from report_settings`);
  return {
    timeZone: row?.time_zone ?? 'UTC',
    businessHours: row?.business_hours ?? null,
    businessWindows: row?.business_windows ?? null,
    slaFirstResponseSeconds: row?.sla_first_response_seconds ?? null,
    slaResolutionSeconds: row?.sla_resolution_seconds ?? null,
    updatedAt: row?.updated_at ?? null,
  };
}
