import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { GeneralLedgerLine, GeneralLedgerReader } from '@firm/ledger';
import { BREATHE_ROWS } from './render';

const text = JSON.stringify;

/** A line with exactly the fields the schema documents, in its order. */
const lineJson = (l: GeneralLedgerLine) =>
  text({
    entryId: l.entryId,
    lineId: l.lineId,
    lineNo: l.lineNo,
    date: l.date,
    memo: l.memo,
    description: l.description,
    debitCents: l.debitCents,
    creditCents: l.creditCents,
    runningBalanceCents: l.runningBalanceCents,
  });

/**
 * The general ledger as JSON, written as the lines are read, a page at a time: what `JSON.stringify` would make of the
 * whole report, without the whole report in memory, between `around`'s two texts (an envelope such as `{"data":` and
 * `}`). The reader is closed when the stream ends, however it ends.
 */
export function generalLedgerJson(gl: GeneralLedgerReader, around: [string, string] = ['', '']): Readable {
  const stream = Readable.from(
    (async function* () {
      try {
        yield `${around[0]}{"startDate":${text(gl.startDate)},"endDate":${text(gl.endDate)},"accounts":[`;
        for (const [i, a] of gl.accounts.entries()) {
          const head = {
            accountId: a.accountId,
            code: a.code,
            name: a.name,
            type: a.type,
            subtype: a.subtype,
            openingBalanceCents: a.openingBalanceCents,
          };
          yield `${i > 0 ? ',' : ''}${text(head).slice(0, -1)},"lines":[`;
          let first = true;
          for await (const page of gl.pages(a)) {
            for (let i = 0; i < page.length; i += BREATHE_ROWS) {
              yield `${first ? '' : ','}${page
                .slice(i, i + BREATHE_ROWS)
                .map(lineJson)
                .join(',')}`;
              first = false;
              await nextTurn();
            }
          }
          yield `],"closingBalanceCents":${a.closingBalanceCents}}`;
        }
        yield `]}${around[1]}`;
      } finally {
        await gl.close();
      }
    })(),
    { objectMode: false },
  );
  stream.once('close', () => void gl.close().catch(() => {}));
  return stream;
}
