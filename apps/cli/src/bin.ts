import { openDatabase } from '@firm/db';
import { runCli } from './main';

const database = openDatabase({
  url: process.env.DATABASE_URL || undefined,
  dataDir: process.env.DATA_DIR || undefined,
});
try {
  process.exitCode = await runCli(process.argv.slice(2), database, {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
  });
} finally {
  await database.close();
}
