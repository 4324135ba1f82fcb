// Adds the Hugging Face tokenizer's results to tests/data/tokenizer_extra_cases.json and
// tests/data/tokenizer_stress_cases.json.
//
// Independent implementation: Hugging Face `tokenizers` (Rust, npm package tokenizers@0.23.2)
// loading ../shared/golden/tokenizer/tokenizer.json. For each case it stores
//   hf_ids / hf_pieces  = encode(text, addSpecialTokens=false)
//   hf_t5_ids           = encode(text, addSpecialTokens=true)   (T5: `</s>` appended)
// It also writes tests/data/tokenizer_sdcpp_compat_hf.json: HF's ids (no special tokens added
// by the post-processor, which the compat file lacks anyway) for the 87 strings of
// golden/minit2i/tokenizer_sdcpp.json with golden/minit2i/tokenizer_sdcpp_compat.json.
// Run after gen_tokenizer_extra_cases.py (which rewrites the file without these fields):
//   (cd /tmp/x && npm install tokenizers@0.23.2)
//   NODE_PATH=/tmp/x/node_modules node tools/tokenizer/gen_tokenizer_hf_cases.js [GOLDEN_DIR]
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

// Compact but diff-friendly: the header fields, then one case per line.
function oneCasePerLine(doc) {
  const head = Object.assign({}, doc);
  delete head.cases;
  const h = JSON.stringify(head);
  return h.slice(0, -1) + (h.length > 2 ? ',' : '') + '"cases":[\n' +
    doc.cases.map((c) => JSON.stringify(c)).join(',\n') + '\n]}\n';
}

(async () => {
  const root = path.resolve(__dirname, '..', '..');
  let golden = process.argv[2] || path.join(root, '..', 'shared', 'golden');
  if (!process.argv[2] && !fs.existsSync(golden)) golden = path.join(root, '..', '..', 'shared', 'golden');
  const tok = Tokenizer.fromFile(path.join(golden, 'tokenizer', 'tokenizer.json'));
  for (const name of ['tokenizer_extra_cases.json', 'tokenizer_stress_cases.json']) {
    const file = path.join(root, 'tests', 'data', name);
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (const c of doc.cases) {
      const plain = await tok.encode(c.text, null, { addSpecialTokens: false });
      const t5 = await tok.encode(c.text, null, { addSpecialTokens: true });
      c.hf_ids = plain.getIds();
      c.hf_pieces = plain.getTokens();
      c.hf_t5_ids = t5.getIds();
    }
    doc.hf_oracle = 'Hugging Face tokenizers (npm tokenizers 0.23.2) on golden/tokenizer/tokenizer.json';
    fs.writeFileSync(file, oneCasePerLine(doc));
    console.log('wrote', file, doc.cases.length, 'cases');
  }

  const compat = Tokenizer.fromFile(path.join(golden, 'minit2i', 'tokenizer_sdcpp_compat.json'));
  const sd = JSON.parse(fs.readFileSync(path.join(golden, 'minit2i', 'tokenizer_sdcpp.json'), 'utf8'));
  const out = { hf_oracle: 'Hugging Face tokenizers (npm tokenizers 0.23.2) on golden/minit2i/tokenizer_sdcpp_compat.json', cases: [] };
  for (const c of sd.cases) {
    const e = await compat.encode(c.text, null, { addSpecialTokens: true });
    out.cases.push({ text: c.text, hf_ids: e.getIds(), hf_pieces: e.getTokens() });
  }
  const file2 = path.join(root, 'tests', 'data', 'tokenizer_sdcpp_compat_hf.json');
  fs.writeFileSync(file2, oneCasePerLine(out));
  console.log('wrote', file2, out.cases.length, 'cases');
})().catch((e) => { console.error(e); process.exit(1); });
