import { DomainError } from '@firm/core';
import type { PlatformOperation, ReportName } from '@firm/platform';
import { type CoverageEntry, coverageOf } from './coverage';

/** What a relayed call reaches, once its path is confined to the company's API root. */
export type Relayed =
  | { kind: 'entity'; entry: CoverageEntry; operation: PlatformOperation; id: string | null }
  | { kind: 'query'; query: string }
  | { kind: 'report'; report: ReportName };

const REPORTS: Record<string, ReportName> = {
  profitandloss: 'profit-loss',
  balancesheet: 'balance-sheet',
  trialbalance: 'trial-balance',
  generalledger: 'general-ledger',
};

const refused = (message: string) =>
  new DomainError('VALIDATION_ERROR', `path ${message}`, [{ field: 'body.path', message }]);

/**
 * Reads a pass-through path the way the platform's v3 API does (`invoice/42`, `query`, `reports/ProfitAndLoss`,
 * `companyinfo/<id>`, optionally under `/v3/company/<id>/`), confined to one company: no absolute URL, no `..` or
 * `.` segment, no percent-encoded slash, backslash or dot, no segment that is not a plain name or id once decoded,
 * no other company's id. Anything else is refused before anything is read.
 */
export function resolvePassThrough(
  method: string,
  rawPath: string,
  query: Record<string, string>,
  body: Record<string, unknown> | undefined,
  acctCompanyId: string,
): Relayed {
  if (/^[a-z][a-z0-9+.-]*:/i.test(rawPath) || rawPath.startsWith('//')) refuse('must be relative, not a URL');
  if (/%(2f|2e|5c|00)/i.test(rawPath)) refuse('must not encode slashes, dots or backslashes');
  if (/[\\?#]/.test(rawPath) || [...rawPath].some((c) => c.charCodeAt(0) < 32)) {
    refuse('must not carry backslashes, control characters, ? or #');
  }
  let segments = rawPath.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '..' || s === '.')) refuse('must not contain . or .. segments');
  // Every segment, once decoded, is a plain name or id: a second layer of encoding (%252e) or a malformed escape
  // cannot smuggle a dot, slash or anything else to a platform that decodes again.
  segments = segments.map((s) => {
    const decoded = decodeSegment(s);
    if (!SEGMENT.test(decoded)) refuse('segments must be names or ids (letters, digits, - and _)');
    return decoded;
  });
  if (segments[0]?.toLowerCase() === 'v3') {
    if (segments[1]?.toLowerCase() !== 'company' || !segments[2]) refuse('must name the company after /v3/company/');
    if (segments[2] !== acctCompanyId) {
      throw new DomainError('CLIENT_NOT_FOUND', 'the path names another company');
    }
    segments = segments.slice(3);
  }
  const [head, second, ...rest] = segments;
  if (!head) refuse('is empty');
  const name = (head as string).toLowerCase();
  const upper = method.toUpperCase();
  if (name === 'query') {
    const text = query.query ?? (typeof body?.query === 'string' ? body.query : undefined);
    if (!text) refuse('query needs a query parameter');
    return { kind: 'query', query: text as string };
  }
  if (name === 'reports') {
    const report = second ? REPORTS[second.toLowerCase()] : undefined;
    if (!report || rest.length > 0 || upper !== 'GET') {
      throw new DomainError(
        'ENTITY_NOT_COVERED',
        `no report ${second ?? ''}; the reports are ${Object.keys(REPORTS).join(', ')}`,
      );
    }
    return { kind: 'report', report };
  }
  const entry = coverageOf(name);
  if (!entry || entry.path !== name) throw new DomainError('ENTITY_NOT_COVERED', `the gateway does not cover ${head}`);
  if (rest.length > 0) refuse('has more segments than <entity>/<id>');
  if (upper === 'GET') {
    if (!second) refuse('needs an id to read; list records with a query');
    return { kind: 'entity', entry, operation: 'read', id: second as string };
  }
  if (upper !== 'POST') {
    throw new DomainError('OPERATION_NOT_SUPPORTED', `the platform takes GET and POST; ${upper} is not one of them`);
  }
  if (second) refuse('POST goes to <entity>, with the Id in the body');
  const op = query.operation?.toLowerCase();
  if (op === 'delete') return { kind: 'entity', entry, operation: 'delete', id: idOf(body) };
  if (op && op !== 'update') throw new DomainError('OPERATION_NOT_SUPPORTED', `no operation ${op}`);
  const id = body && body.Id !== undefined ? idOf(body) : null;
  return { kind: 'entity', entry, operation: id ? 'update' : 'create', id };
}

const SEGMENT = /^[A-Za-z0-9_-]{1,100}$/;

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return refuse('has a malformed percent-encoding');
  }
}

function refuse(message: string): never {
  throw refused(message);
}

function idOf(body: Record<string, unknown> | undefined): string {
  const id = body?.Id;
  if (typeof id !== 'string' || id === '') {
    throw new DomainError('VALIDATION_ERROR', 'body.body.Id is required', [
      { field: 'body.body.Id', message: 'is required' },
    ]);
  }
  return id;
}
