import type { Executor } from '@firm/db';
import { chartAccounts } from '@firm/ledger';

interface ChartAccount {
  id: string;
  code: string;
  name: string;
  archived: boolean;
}

/**
 * A company's chart of accounts, looked up the ways a file names an account: by code, by full name, or by the last
 * segment of a colon path (`Expenses:Rent` is the account named Rent). Names compare without regard to case. A chart
 * is small (hundreds of accounts), so it is read once per import.
 */
export class ChartIndex {
  private byCode = new Map<string, ChartAccount>();
  private byName = new Map<string, ChartAccount[]>();

  constructor(accounts: readonly ChartAccount[]) {
    for (const a of accounts) {
      this.byCode.set(a.code, a);
      const key = a.name.trim().toLowerCase();
      this.byName.set(key, [...(this.byName.get(key) ?? []), a]);
    }
  }

  static async load(db: Executor, organizationId: string): Promise<ChartIndex> {
    return new ChartIndex(await chartAccounts(db, organizationId));
  }

  /** The account a file's text names, or why it names none. */
  resolve(text: string): { id: string } | { error: string } {
    const name = text.trim();
    const found = this.find(name);
    if ('error' in found) return found;
    if (found.account.archived) return { error: `account "${name}" (${found.account.code}) is archived` };
    return { id: found.account.id };
  }

  private find(name: string): { account: ChartAccount } | { error: string } {
    const byCode = this.byCode.get(name);
    if (byCode) return { account: byCode };
    const last = name.includes(':') ? (name.split(':').pop() as string).trim() : null;
    for (const candidate of [name, last]) {
      if (candidate === null) continue;
      const code = candidate === last ? this.byCode.get(candidate) : undefined;
      if (code) return { account: code };
      const matches = this.byName.get(candidate.trim().toLowerCase()) ?? [];
      if (matches.length === 1) return { account: matches[0] as ChartAccount };
      if (matches.length > 1) {
        return {
          error: `"${name}" names ${matches.length} accounts (${matches.map((a) => a.code).join(', ')}); use the code`,
        };
      }
    }
    return { error: `no account "${name}" in the chart (by code, name or last segment of a colon path)` };
  }
}
