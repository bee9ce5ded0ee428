import type { Database } from './connection';

export interface StatusLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface Readiness {
  ready: boolean;
  reachable: boolean;
  /** Migrations of this build not yet applied; null when the database could not be asked. */
  pendingMigrations: number | null;
}

/**
 * What a process knows of its database: whether it answers, and whether its schema is this build's. A failure
 * reported while the database was up is logged once, then the database is pinged until it answers again (also
 * logged once), so an outage costs two log lines rather than a stack trace per request or per worker round.
 */
export class DatabaseStatus {
  private down = false;
  private migrated = false;
  private lastCheck = 0;
  private probe: NodeJS.Timeout | null = null;

  constructor(
    private readonly database: Database,
    private readonly log: StatusLog,
    private readonly recheckMs = 2000,
  ) {}

  /** Asks the database now: does it answer, and is every migration of this build applied? */
  async check(): Promise<Readiness> {
    this.lastCheck = Date.now();
    let pending: number | null = null;
    try {
      pending = await this.database.pendingMigrations();
    } catch (err) {
      this.reportUnavailable(err);
      return { ready: false, reachable: false, pendingMigrations: null };
    }
    this.reportAvailable();
    this.migrated = pending === 0;
    return { ready: this.migrated, reachable: true, pendingMigrations: pending };
  }

  /**
   * Null when requests may go to the database, else why not: its schema is not (yet) this build's. Once it is
   * known to be migrated this costs nothing; before, the database is asked again at most every `recheckMs`.
   * An unreachable database is not refused here: each request tries, and fails as unavailable if it still is.
   */
  async refusal(): Promise<string | null> {
    if (this.migrated) return null;
    if (Date.now() - this.lastCheck >= this.recheckMs) await this.check();
    if (this.migrated) return null;
    return this.down
      ? 'the database is unavailable; retry later'
      : 'the database schema is not migrated: run `npm run cli -- migrate`';
  }

  /** A query failed because the database cannot serve. */
  reportUnavailable(err: unknown): void {
    if (this.down) return;
    this.down = true;
    this.log.warn(
      { reason: (err as Error)?.message ?? String(err) },
      'database unavailable: answering 503 until it answers again',
    );
    this.probe = setInterval(() => {
      this.database.ping().then(
        (ok) => ok && this.reportAvailable(),
        () => {},
      );
    }, this.recheckMs);
    this.probe.unref();
  }

  private reportAvailable(): void {
    if (!this.down) return;
    this.down = false;
    this.stop();
    this.log.info({}, 'database available again');
  }

  /** What the last check and the failures since say, without asking the database. */
  get known(): { reachable: boolean; ready: boolean } {
    return { reachable: !this.down, ready: this.migrated && !this.down };
  }

  stop(): void {
    if (this.probe) clearInterval(this.probe);
    this.probe = null;
  }
}
