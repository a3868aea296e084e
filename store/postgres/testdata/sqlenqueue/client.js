// The Node client of the SQL enqueue tests (sqlenqueue_client_test.go).
//
// node client.js URL SCHEMA NOTE KEY HOLD commit|rollback
// prints "<job id> <inserted>"; an empty KEY enqueues without a unique key.
// Needs the pg package: npm ci in this directory.
const { Client } = require("pg");

async function main() {
  const [url, schema, note, key, hold, action] = process.argv.slice(2);
  const client = new Client({ connectionString: url });
  await client.connect();
  const s = client.escapeIdentifier(schema);
  try {
    await client.query("BEGIN");
    await client.query(`INSERT INTO ${s}.app_row (lang, note) VALUES ('node', $1)`, [note]);
    const { rows } = await client.query(
      `SELECT job_id, inserted FROM ${s}.enqueue($1, $2, unique_key => $3)`,
      ["sqlenqueue.greet", JSON.stringify({ to: note, lang: "node", n: 1 }), key || null],
    );
    await new Promise((resolve) => setTimeout(resolve, Number(hold) * 1000));
    await client.query(action === "commit" ? "COMMIT" : "ROLLBACK");
    console.log(`${rows[0].job_id} ${rows[0].inserted}`);
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
