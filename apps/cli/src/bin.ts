import { type Database, DataDirInUseError, claimDataDir, openDatabase, runInOwner } from '@firm/db';
import { type Io, runCli } from './main';

const io: Io = {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
};
const argv = process.argv.slice(2);
const url = process.env.DATABASE_URL || undefined;

async function run(database: Database): Promise<number> {
  try {
    return await runCli(argv, database, io);
  } finally {
    await database.close();
  }
}

/**
 * On the embedded database the command runs in the process that owns the data directory when there is one
 * (the server, say), so its writes are the server's; otherwise this process claims the directory for the
 * command's duration, answering commands forwarded to it meanwhile.
 */
async function runEmbedded(dataDir: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const forwarded = await runInOwner(dataDir, argv, io);
    if (forwarded !== null) return forwarded;
    try {
      const owner = await claimDataDir(dataDir);
      const database = openDatabase({ dataDir });
      owner.serve((forwardedArgv, forwardedIo) => runCli(forwardedArgv, database, forwardedIo));
      try {
        return await runCli(argv, database, io);
      } finally {
        await owner.stopServing();
        await database.close();
        await owner.release();
      }
    } catch (err) {
      // The owner stopped between the two steps, or another process claimed the directory first.
      if (!(err instanceof DataDirInUseError) || attempt >= 2) throw err;
    }
  }
}

try {
  process.exitCode = url ? await run(openDatabase({ url })) : await runEmbedded(process.env.DATA_DIR || './.data');
} catch (err) {
  if (!(err instanceof DataDirInUseError)) throw err;
  io.err(err.message);
  process.exitCode = 1;
}
