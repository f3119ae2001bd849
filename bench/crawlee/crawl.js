// The Crawlee peer crawler of Petrel's crawl benchmark (petrel bench crawl):
// Crawlee's CheerioCrawler configured as a careful user would. The global
// concurrency cap is Petrel's (maxConcurrency), one request start per
// registrable domain per host delay (sameDomainDelaySecs: Crawlee measures it
// from the start of the previous request), robots.txt obeyed
// (respectRobotsTxtFile, its group matched by our product token), links
// followed within the web (enqueueLinks with strategy "all", kept to the
// .test names), every type fetched as the other crawlers do (links are
// taken from HTML only), at most --max-urls requests (maxRequestsPerCrawl). Crawlee
// cannot express a per-IP delay, so --ip-delay is accepted and ignored.
// --max-per-minute, if set, is maxRequestsPerMinute. It stores nothing: the
// request queue lives in memory (persistStorage off) and no dataset is kept.
//
// Names come from the system resolver; the harness runs it in a private
// mount namespace whose /etc/hosts is the web's hosts file. The web's
// certificate authority is given through NODE_EXTRA_CA_CERTS.
//
// Every --progress seconds it prints "pages N (R/s)" on stderr, and at the
// end (or on SIGINT/SIGTERM) one JSON line on stdout:
// {"pages":N,"errors":E,"elapsed_s":S,...}. Run it with NODE_PATH naming the
// node_modules that hold crawlee@3.18.1.
'use strict';

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { CheerioCrawler, Configuration, log, LogLevel } = require('crawlee');

const { values: a } = parseArgs({
    options: {
        seeds: { type: 'string' },
        'host-delay': { type: 'string', default: '0.1' },
        'ip-delay': { type: 'string', default: '0.01' },
        concurrency: { type: 'string', default: '256' },
        'max-urls': { type: 'string', default: '0' },
        'max-per-minute': { type: 'string', default: '0' },
        progress: { type: 'string', default: '1' },
        'user-agent': { type: 'string', default: 'petrel-bench-crawlee/1.0' },
    },
});
if (!a.seeds) {
    console.error('crawlee-bench: --seeds is required');
    process.exit(2);
}
const seeds = fs.readFileSync(a.seeds, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
const ua = a['user-agent'];
const onWeb = /^https?:\/\/[^/?#]*\.test(:\d+)?([/?#]|$)/i;

log.setLevel(LogLevel.WARNING);
const config = new Configuration({ persistStorage: false, purgeOnStart: true });
let pages = 0;
let errors = 0;
let bytes = 0;
const start = process.hrtime.bigint();
const elapsed = () => Number(process.hrtime.bigint() - start) / 1e9;

let done = false;
function finish(stopped) {
    if (done) return;
    done = true;
    process.stdout.write(JSON.stringify({ pages, errors, bytes_received: bytes, elapsed_s: elapsed(), stopped }) + '\n');
}
for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
        finish(true);
        process.exit(0);
    });
}

const opts = {
    maxConcurrency: Number(a.concurrency),
    sameDomainDelaySecs: Number(a['host-delay']),
    respectRobotsTxtFile: { userAgent: ua.split('/')[0] },
    requestHandlerTimeoutSecs: 30,
    navigationTimeoutSecs: 10,
    ignoreHttpErrorStatusCodes: [404, 410], // a 404 is a page fetched, as for the others
    additionalMimeTypes: ['*/*'], // fetch what <a href> names, as the others do, not HTML only,
    preNavigationHooks: [(_ctx, gotOptions) => {
        gotOptions.headers = { ...gotOptions.headers, 'user-agent': ua };
    }],
    async requestHandler({ body, contentType, enqueueLinks }) {
        pages++;
        bytes += body.length;
        if (contentType.type === 'text/html') {
            await enqueueLinks({ strategy: 'all', regexps: [onWeb] });
        }
    },
    failedRequestHandler() {
        errors++;
    },
};
if (Number(a['max-urls']) > 0) opts.maxRequestsPerCrawl = Number(a['max-urls']);
if (Number(a['max-per-minute']) > 0) opts.maxRequestsPerMinute = Number(a['max-per-minute']);

const every = Number(a.progress) * 1000;
let last = { n: 0, t: elapsed() };
const ticker = every > 0 ? setInterval(() => {
    const t = elapsed();
    process.stderr.write(`pages ${pages} (${((pages - last.n) / Math.max(t - last.t, 1e-9)).toFixed(0)}/s)\n`);
    last = { n: pages, t };
}, every) : null;

new CheerioCrawler(opts, config).run(seeds).then(() => {
    if (ticker) clearInterval(ticker);
    finish(false);
    process.exit(0);
}, (err) => {
    console.error('crawlee-bench:', err);
    finish(false);
    process.exit(1);
});
