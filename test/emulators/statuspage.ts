/**
 * Status page / bridge notice emulator: Atlassian Statuspage JSON (/api/v2/status.json and
 * /api/v2/summary.json, shapes from test/fixtures/upstreams/statuspage) plus arbitrary pages
 * (HTML notices, redirects) set per path, for the http and bridge checks and for safeFetch tests.
 */
import { Emulator, type Reply } from './core.js';

export type Indicator = 'none' | 'minor' | 'major' | 'critical';

export interface Incident {
  name: string;
  status: 'investigating' | 'identified' | 'monitoring' | 'resolved' | 'postmortem';
  updates?: string[];
}

const DESCRIPTIONS: Record<Indicator, string> = {
  none: 'All Systems Operational',
  minor: 'Minor Service Outage',
  major: 'Partial System Outage',
  critical: 'Major Service Outage',
};

export class StatusPageEmulator extends Emulator {
  indicator: Indicator = 'none';
  description: string | null = null;
  incidents: Incident[] = [];
  private readonly pages = new Map<string, Reply>();

  setIndicator(indicator: Indicator, description?: string): this {
    this.indicator = indicator;
    this.description = description ?? null;
    return this;
  }

  /** Serve `body` at `path` (any method), with `status` and headers; text/html unless told. */
  setPage(path: string, body: string, opts: { status?: number; headers?: Record<string, string> } = {}): this {
    this.pages.set(path, {
      status: opts.status ?? 200,
      headers: { 'content-type': 'text/html; charset=utf-8', ...opts.headers },
      body,
    });
    return this;
  }

  /** Answer `path` with a redirect to `location`. */
  setRedirect(path: string, location: string, status = 302): this {
    this.pages.set(path, { status, headers: { location, 'content-type': 'text/plain' }, body: '' });
    return this;
  }

  private page(): Record<string, unknown> {
    return {
      id: 'kctbh9vrtdwd',
      name: 'Bridge',
      url: this.url,
      time_zone: 'Etc/UTC',
      updated_at: new Date().toISOString(),
    };
  }

  private status(): Record<string, unknown> {
    return { indicator: this.indicator, description: this.description ?? DESCRIPTIONS[this.indicator] };
  }

  constructor() {
    super();
    this.route('GET', '/api/v2/status.json', () => ({ body: { page: this.page(), status: this.status() } }));
    this.route('GET', '/api/v2/summary.json', () => ({
      body: {
        page: this.page(),
        status: this.status(),
        components: [],
        incidents: this.incidents.map((i, n) => ({
          id: `inc${n}`,
          name: i.name,
          status: i.status,
          impact: this.indicator,
          incident_updates: (i.updates ?? []).map((body, k) => ({ id: `upd${n}-${k}`, status: i.status, body })),
        })),
        scheduled_maintenances: [],
      },
    }));
    this.route(
      '*',
      /.*/,
      (req) =>
        this.pages.get(req.path) ?? {
          status: 404,
          headers: { 'content-type': 'text/html' },
          body: '<h1>Not found</h1>',
        },
    );
  }
}

export async function startStatusPage(): Promise<StatusPageEmulator> {
  return new StatusPageEmulator().listen();
}
