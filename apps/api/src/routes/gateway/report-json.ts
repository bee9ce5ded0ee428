import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { StreamedReport } from '@firm/platform';

const text = JSON.stringify;
/** Rows written between turns of the event loop. */
const SLICE = 500;

/** An object's JSON without its closing brace, so that more members can follow. */
const open = (value: Record<string, unknown>) => {
  const json = text(value);
  return json === '{}' ? '{' : `${json.slice(0, -1)},`;
};

/**
 * `{"data": <report>}` written as the report's sections and their pages of rows are read: the JSON Fastify would send
 * for the whole report, without the whole report in memory. The report is closed when the stream ends, however it
 * ends.
 */
export function streamedReportJson(report: StreamedReport): Readable {
  const stream = Readable.from(
    (async function* () {
      try {
        yield `{"data":${open(report.head)}"Rows":{"Row":[`;
        let firstSection = true;
        for await (const { section, rows, summary } of report.sections) {
          yield `${firstSection ? '' : ','}${open(section)}"Rows":{"Row":[`;
          firstSection = false;
          let firstPage = true;
          for await (const page of rows) {
            for (let i = 0; i < page.length; i += SLICE) {
              yield `${firstPage ? '' : ','}${page
                .slice(i, i + SLICE)
                .map((row) => text(row))
                .join(',')}`;
              firstPage = false;
              await nextTurn();
            }
          }
          yield `]},"Summary":${text(summary)}}`;
        }
        yield ']}}}';
      } finally {
        await report.close();
      }
    })(),
    { objectMode: false },
  );
  stream.once('close', () => void report.close().catch(() => {}));
  return stream;
}
