import { agentLimits, type Executor } from '@firm/db';
import { eq, sql } from 'drizzle-orm';

/** A firm's limits for agents; null: the deployment's default. */
export interface AgentLimits {
  writeBudget: number | null;
  readLimit: number | null;
}

export async function getAgentLimits(db: Executor, firmId: string): Promise<AgentLimits> {
  const [row] = await db
    .select({ writeBudget: agentLimits.writeBudget, readLimit: agentLimits.readLimit })
    .from(agentLimits)
    .where(eq(agentLimits.firmId, firmId));
  return row ?? { writeBudget: null, readLimit: null };
}

/** Sets the fields given (null: back to the default); the others keep their value. */
export async function setAgentLimits(db: Executor, firmId: string, patch: Partial<AgentLimits>): Promise<AgentLimits> {
  const values = { firmId, ...patch, updatedAt: sql`now()` };
  const [row] = await db
    .insert(agentLimits)
    .values(values)
    .onConflictDoUpdate({ target: agentLimits.firmId, set: { ...patch, updatedAt: sql`now()` } })
    .returning({ writeBudget: agentLimits.writeBudget, readLimit: agentLimits.readLimit });
  return row as AgentLimits;
}

/**
 * Limits read once per firm and kept for `ttlMs`, so that counting a request costs no query: a change reaches
 * every process within that time.
 */
export class AgentLimitsCache {
  private readonly entries = new Map<string, { at: number; limits: Promise<AgentLimits> }>();
  constructor(
    private readonly db: () => Executor,
    private readonly ttlMs: number,
  ) {}

  get(firmId: string): Promise<AgentLimits> {
    const now = Date.now();
    const hit = this.entries.get(firmId);
    if (hit && now - hit.at < this.ttlMs) return hit.limits;
    const limits = getAgentLimits(this.db(), firmId);
    this.entries.set(firmId, { at: now, limits });
    limits.catch(() => this.entries.delete(firmId));
    return limits;
  }

  /** Forgets a firm's limits in this process (after this process changed them). */
  forget(firmId: string): void {
    this.entries.delete(firmId);
  }
}
