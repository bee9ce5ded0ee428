/** A proposal as the agent routes answer it: the fields the next step is told from. */
export interface ProposalAnswer {
  id: string;
  status: 'pending' | 'approved' | 'rejected' | 'executed' | 'failed' | 'expired';
  expiresAt: string;
  request: { idempotencyKey: string | null };
  decision: { note: string | null } | null;
  result: { status: number } | null;
  failure: { code: string; reason: string } | null;
}

/**
 * What happens next to a write the firm's approval policy held, and what the agent does about it, in plain words: a
 * model reading a tool result must not take a held write for a written one. `write`: the write tool's own answer;
 * `status`: proposal_status's.
 */
export function nextStepOf(proposal: ProposalAnswer, from: 'write' | 'status'): string {
  const { id, expiresAt } = proposal;
  const key = proposal.request.idempotencyKey;
  const tool = from === 'write' ? 'this tool' : 'the write tool';
  const again = key
    ? `calling ${tool} again with the same idempotencyKey (${key}) returns the written record`
    : 'proposal_status shows the written record in `result`';
  switch (proposal.status) {
    case 'pending':
      return from === 'write'
        ? `Nothing was written yet: a person at the firm must approve this write (proposal ${id}, expires ` +
            `${expiresAt}). Check it with the proposal_status tool { "proposalId": "${id}" }; once approved and ` +
            `executed, ${again}.`
        : `Nothing was written yet: the write waits for a person at the firm to approve it, until ${expiresAt}. ` +
            'Check again later with proposal_status.';
    case 'approved':
      return (
        'Approved: the write is running, or, if the accounting platform did not answer, runs again when this proposal ' +
        'is read a few minutes from now (never twice). Check again shortly with proposal_status.'
      );
    case 'executed':
      return (
        `Approved and written: the write's response (status ${proposal.result?.status ?? 200}) is in \`result\`` +
        `${key ? `; calling ${tool} again with the same idempotencyKey (${key}) returns it too` : ''}.`
      );
    case 'failed':
      return (
        `Approved, but the write could not run (${proposal.failure?.code ?? 'INTERNAL'}: ` +
        `${proposal.failure?.reason ?? 'no reason given'}); nothing was written. To try again, send a new write with ` +
        'a new idempotencyKey.'
      );
    case 'rejected':
      return (
        `A person at the firm rejected the write${proposal.decision?.note ? `: "${proposal.decision.note}"` : ' (no note)'}; ` +
        'nothing was written. Do not send it again as it was.'
      );
    case 'expired':
      return (
        `Nobody decided before ${expiresAt}, so the proposal expired and nothing was written. To make the write ` +
        'still, send it again with a new idempotencyKey.'
      );
  }
}
