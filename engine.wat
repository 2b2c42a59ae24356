;; engine.wat: the Needle 2 engine in hand-written WebAssembly (text format, assembled by
;; `wat2wasm --enable-threads`). docs/engine.md describes the memory map, the exports, the ABI, the
;; thread pool, the kernels and the error codes; docs/numerics.md is the numerics contract that this
;; module follows so that it matches the C++ reference's A8 mode (host/reference.cpp).
;;
;; Constraints that shape every line below:
;;  * One SHARED memory, imported as env.memory. The driver (a Worker that runs step, the tokenizer and
;;    the sampler) and the helpers (Workers that only run `helper`) each instantiate this module on it.
;;  * Globals belong to an instance, so no instance may keep state in a mutable global: every piece of
;;    state lives in memory at a fixed address (the ADDR_* table below) or in blocks handed out by the
;;    bump allocator, whose pointers are themselves stored at fixed addresses. The globals of this
;;    module are immutable constants, exported so that JavaScript never keeps a second copy.
;;  * No data segments at all: every table is computed here, never copied in. expf's table of 2^(j/32)
;;    is made by `init` (which only the driver calls, before anything else); the other tables
;;    (permutations, int8 codebooks) are computed at load time.
;;  * Every memory.atomic.wait32 sits in its own tiny function ($wait32): Node 20's baseline compiler
;;    (Liftoff) loses register-held locals across an inline wait (docs/engine.md, toolchain notes).
;;  * Nothing traps on bad input: the loader validates the archive first and returns an ERR_* code with
;;    the failing record index at ADDR_ERR_RECORD.
(module
  (import "env" "memory" (memory $mem 1 65536 shared))
  ;; A clock in milliseconds, the same origin in every thread (the host gives timeOrigin + now()):
  ;; read only while the job log is on (below), never by the numerics.
  (import "env" "now" (func $now (result f64)))

  ;; Job functions for the thread pool, called with (begin, end) item ranges and the calling thread's
  ;; slot (0: the driver, 1..THREADS-1: the helpers), which indexes per-thread scratch.
  ;; Row kernels (indices ROW_KERNEL + kind, ROW_KERNEL_QUAD + kind; kinds KIND_*) share the table:
  ;; (packed row, norms, blocks, mask, levels) -> f32.
  (type $job_t (func (param i32 i32 i32)))
  (type $row_t (func (param i32 i32 i32 i32 v128) (result f32)))
  (table $jobs 13 funcref)
  (elem (i32.const 0) $job_matvec $job_attention $job_batch $job_fused)   ;; jobs 0..3 (JOB_* below)
  (elem (i32.const 4) $row2 $row3 $row4 $row2)                     ;; ROW_KERNEL: kinds 2-bit, 3-bit, 4-bit, ternary (KIND_* order)
  (elem (i32.const 8) $row2q $row3 $row4q $row2q)                   ;; ROW_KERNEL_QUAD: the same for groups of 128k (3-bit: never)
  (elem (i32.const 12) $test_job_fill)                              ;; test-only: the pool's tests (test_pool)

  ;; ------------------------------------------------------------------------------------------
  ;; The address table: every fixed field, with its purpose. All i32 unless noted.
  ;; ------------------------------------------------------------------------------------------
  ;; Thread pool (each busy word on its own 64-byte cache line)
  (global $GEN   (export "ADDR_GEN")   i32 (i32.const 64))   ;; generation of the current job; helpers wait on it
  (global $DONE  (export "ADDR_DONE")  i32 (i32.const 128))  ;; items of the current job completed; the driver waits on it
  (global $READY (export "ADDR_READY") i32 (i32.const 192))  ;; helpers started; a helper's slot = its old value
  (global $NEXT  (export "ADDR_NEXT")  i32 (i32.const 256))  ;; i64: generation << 32 | next unclaimed item
  (global $JOB   (export "ADDR_JOB")   i32 (i32.const 320))  ;; the job being run: fields JOB_FN, JOB_COUNT, JOB_CHUNK
  (global $THREADS (export "ADDR_THREADS") i32 (i32.const 336)) ;; threads wanted, driver included (>= 1)
  (global $SPIN  (export "ADDR_SPIN")  i32 (i32.const 340))  ;; spin rounds before a wait
  (global $QUIT  (export "ADDR_QUIT")  i32 (i32.const 344))  ;; 1: helpers return from `helper`
  (global $IDLE  i32 (i32.const 348))  ;; 1 between steps: a helper done with a job sleeps at once instead of spinning
  (global $STOP  (export "ADDR_STOP")  i32 (i32.const 384))  ;; 1: generate stops after the current token (set by the page)
  (global $HEAP_TOP (export "ADDR_HEAP_TOP") i32 (i32.const 448)) ;; bump allocator: first free byte
  (global $ARGS  (export "ADDR_ARGS")  i32 (i32.const 512))  ;; 16 job arguments (i32 / f32), laid out per job: MV_*, ATT_*, FILL_*
  ;; The job log (docs/engine.md, "Job log"): a record per span, JOBLOG_BYTES each, fields JOBLOG_AT_*
  (global $P_JOBLOG (export "ADDR_JOBLOG") i32 (i32.const 576)) ;; -> the records being written (0: the log is off)
  (global $JOBLOG_BUF (export "ADDR_JOBLOG_BUF") i32 (i32.const 580))  ;; -> the log's block (kept for the next joblog_start)
  (global $JOBLOG_CAP i32 (i32.const 584))  ;; records the block holds
  (global $JOBLOG_N  i32 (i32.const 640))   ;; records claimed so far (atomic; own line: every thread adds)
  ;; Engine fields
  (global $P_ARCH (export "ADDR_ARCH_PTR") i32 (i32.const 1024)) ;; archive bytes in memory
  (global $ARCH_LEN (export "ADDR_ARCH_LEN") i32 (i32.const 1028)) ;; archive length
  (global $LOADED   (export "ADDR_LOADED")   i32 (i32.const 1032)) ;; 1 once load() succeeded
  (global $ERR_RECORD (export "ADDR_ERR_RECORD") i32 (i32.const 1036)) ;; failing record index, -1 for none
  (global $ERR_DETAIL (export "ADDR_ERR_DETAIL") i32 (i32.const 1040)) ;; header field offset, piece index, ...
  (global $P_RECS     (export "ADDR_RECS")     i32 (i32.const 1044)) ;; -> record descriptor table (D_SIZE bytes each, fields D_*)
  (global $NREC     (export "ADDR_NREC")     i32 (i32.const 1048)) ;; records in the directory
  (global $CORE     (export "ADDR_CORE")     i32 (i32.const 1052)) ;; core records: 1 + 14 L + 9 + 4 S + 1
  (global $HAS_TOK  (export "ADDR_HAS_TOK")  i32 (i32.const 1056)) ;; 1 if the last record is the tokenizer
  (global $NHEADS   (export "ADDR_NHEADS")   i32 (i32.const 1060)) ;; probe heads
  (global $POS      (export "ADDR_POS")      i32 (i32.const 1064)) ;; tokens in the session (next logical position)
  (global $SINK     (export "ADDR_SINK")     i32 (i32.const 1068)) ;; pinned KV positions of this session
  (global $KV_SLOTS (export "ADDR_KV_SLOTS") i32 (i32.const 1072)) ;; physical KV rows per layer and KV head
  (global $KV_CAP   i32 (i32.const 1076))                          ;; rows the KV allocation holds
  (global $P_LOGITS   (export "ADDR_LOGITS")   i32 (i32.const 1080)) ;; -> vocab f32 logits of the last step
  (global $P_TRACE    (export "ADDR_TRACE")    i32 (i32.const 1084)) ;; -> trace buffer (0: no trace)
  (global $P_X      i32 (i32.const 1088)) ;; -> lanes x d: the mHC lanes X_k
  (global $P_NX     i32 (i32.const 1092)) ;; -> lanes x d: rmsunit of the lanes
  (global $P_NEWX   i32 (i32.const 1096)) ;; -> lanes x d: routed lanes
  (global $P_U      i32 (i32.const 1100)) ;; -> d
  (global $P_B      i32 (i32.const 1104)) ;; -> d
  (global $P_H      i32 (i32.const 1108)) ;; -> d
  (global $P_Q      i32 (i32.const 1112)) ;; -> H hd
  (global $P_K      i32 (i32.const 1116)) ;; -> KV hd
  (global $P_V      i32 (i32.const 1120)) ;; -> KV hd
  (global $P_GATE   i32 (i32.const 1124)) ;; -> H hd
  (global $P_O      i32 (i32.const 1128)) ;; -> H hd
  (global $P_A      i32 (i32.const 1132)) ;; -> d
  (global $P_X1     i32 (i32.const 1136)) ;; -> d
  (global $P_Z      i32 (i32.const 1140)) ;; -> hada_n
  (global $P_Y      i32 (i32.const 1144)) ;; -> d
  (global $P_XM     i32 (i32.const 1148)) ;; -> d: embedding row / lane mean
  (global $P_HPRE   i32 (i32.const 1152)) ;; -> lanes
  (global $P_HPOST  i32 (i32.const 1156)) ;; -> lanes
  (global $P_ROUTE  i32 (i32.const 1160)) ;; -> lanes x lanes
  (global $P_RFREQ  i32 (i32.const 1164)) ;; -> hd/2 RoPE frequencies
  (global $P_RCOS   i32 (i32.const 1168)) ;; -> hd/2 cos at the current position
  (global $P_RSIN   i32 (i32.const 1172)) ;; -> hd/2 sin
  (global $P_HIST   (export "ADDR_HIST") i32 (i32.const 1176)) ;; -> max_seq_len u32 token history
  (global $P_KQ     i32 (i32.const 1180)) ;; -> int8 keys, transposed: [layer][kv head][hd][slot]
  (global $P_VQ     i32 (i32.const 1184)) ;; -> int8 values [layer][kv head][slot][hd]
  (global $P_KS     i32 (i32.const 1188)) ;; -> f32 key scales, transposed: [layer][kv head][hd/32][slot]
  (global $P_VS     i32 (i32.const 1192)) ;; -> f32 value scales [layer][kv head][slot][hd/32]
  (global $P_SCORES i32 (i32.const 1196)) ;; -> [H][2][kv slots + 8]: scores by slot, then by key
  (global $P_F16    i32 (i32.const 1200)) ;; -> 65536 f32: every fp16 value widened (the kernels' group norms)
  (global $P_EE     i32 (i32.const 1204)) ;; -> [site][tables x sub_dim] engram e_p
  (global $P_EK     i32 (i32.const 1208)) ;; -> [site][d] k_p
  (global $P_EV     i32 (i32.const 1212)) ;; -> [site][d] tapped v'_p
  (global $P_ERING  i32 (i32.const 1216)) ;; -> [site][ring rows][d] raw v_p
  (global $P_ESLOT  i32 (i32.const 1220)) ;; -> tables u32 slot at this position
  (global $P_EVALID i32 (i32.const 1224)) ;; -> tables u32 1 if the n-gram is whole
  (global $P_PREPF  i32 (i32.const 1228)) ;; -> f32 prepared activation (max padded cols)
  (global $P_PREPQ  i32 (i32.const 1232)) ;; -> i16 quantised prepared activation, permuted per width
  (global $P_PREPS  i32 (i32.const 1236)) ;; -> f32 block scales of the prepared activation
  (global $MAXPAD   i32 (i32.const 1240)) ;; largest padded column count of any product
  (global $SQRTD    i32 (i32.const 1244)) ;; f32 sqrt(d_model)
  (global $P_DQ     i32 (i32.const 1248)) ;; -> f32 scratch of one CQ group (dequantisation)
  ;; (1252 is unused: it held a test switch of the kernels)
  (global $P_SORT   i32 (i32.const 1256)) ;; -> vocab u32 candidate ids (sampler)
  (global $P_PROB   i32 (i32.const 1260)) ;; -> vocab f32 candidate weights (sampler)
  (global $RING_ROWS i32 (i32.const 1264)) ;; engram ring rows per site
  (global $P_IO_BUF   (export "ADDR_IO_BUF") i32 (i32.const 1268)) ;; -> I/O buffer (text in, ids out)
  (global $IO_CAP   (export "ADDR_IO_CAP") i32 (i32.const 1272)) ;; its capacity in bytes
  (global $P_PREP_SRC i32 (i32.const 1276)) ;; prepared activation: source pointer,
  (global $PREP_LAYOUT i32 (i32.const 1280)) ;;  column layout (LAYOUT_*),
  (global $PREP_COLS i32 (i32.const 1284)) ;;  cols
  (global $PREP_GROUP i32 (i32.const 1288)) ;; and group it was prepared for
  (global $STATE_OK i32 (i32.const 1292)) ;; 1 once the session buffers exist
  (global $ARCH_CAP i32 (i32.const 1296)) ;; bytes reserved for the archive by archive_buffer
  (global $P_MASK (export "ADDR_MASK") i32 (i32.const 1300)) ;; -> token mask of sample_masked: 4 ceil(vocab/32) bytes, bit i&31 of u32 word i>>5 = token i allowed
  (global $HEADS_ON i32 (i32.const 1304)) ;; 1: step feeds every cell to the probe-head pooling (heads_begin)
  (global $P_HEADS  i32 (i32.const 1308)) ;; -> probe-head descriptors, 32 bytes each (table below)
  (global $POOLED   i32 (i32.const 1312)) ;; cells pooled since heads_begin
  (global $P_CELL   i32 (i32.const 1316)) ;; -> d: the lane mean after a layer (a cell)
  (global $P_HSCORE i32 (i32.const 1320)) ;; -> $max_probes f32: the probe scores of one head for one cell
  (global $P_POOLV  i32 (i32.const 1324)) ;; -> $max_probes x d f32: a head's pooled probes, probe-major (head_output)
  (global $P_SNAP   i32 (i32.const 1328)) ;; -> the snapshot block (0: none since load): header fields SN_*, then $snap_walk's
  (global $SNAP_CAP i32 (i32.const 1332)) ;; bytes that block holds
  ;; Batched prefill: the chunk's per-token buffers, made by the first prefill after a load
  (global $BATCH_OK i32 (i32.const 1336))   ;; 1 once the blocks below exist
  (global $P_BLANES i32 (i32.const 1340))   ;; -> CHUNK pointers to lanes x d f32: each token's mHC lanes
  (global $P_BACT   i32 (i32.const 1344))   ;; -> CHUNK prepared activations (i16, kernel order), BACT_STRIDE apart
  (global $P_BACTS  i32 (i32.const 1348))   ;; -> their block scales, f32 [block][CHUNK]
  (global $BACT_STRIDE i32 (i32.const 1352)) ;; bytes from one token's prepared activation to the next
  (global $BPREP_SRC i32 (i32.const 1356))  ;; what P_BACT holds: the source field (0: nothing valid),
  (global $BPREP_LAYOUT i32 (i32.const 1360)) ;;  column layout (LAYOUT_*),
  (global $BPREP_COLS i32 (i32.const 1364)) ;;  cols
  (global $BPREP_GROUP i32 (i32.const 1368)) ;; and group
  (global $P_BCELLS i32 (i32.const 1372))   ;; -> [CHUNK][layers + 1][d] f32: the chunk's probe-head cells (with heads)
  (global $P_BROW   i32 (i32.const 1376))   ;; -> per thread slot, BROW_BYTES each: one packed row expanded to i16
  (global $BROW_SLOTS i32 (i32.const 1380)) ;; thread slots P_BROW holds
  (global $BROW_BYTES i32 (i32.const 1384)) ;; bytes per slot
  ;; The header (HEADER_BYTES), copied as is to GEO. Each field's address is GEO + its header offset and is
  ;; exported as GEO_<header field name>, so the driver builds the geometry from the exports alone:
  ;; engram_orders and engram_sites are u32[4], rope_theta is f32, every other field a u32.
  (global $GEO (export "ADDR_GEO") i32 (i32.const 1536))
  (global $G_NT (export "GEO_num_tensors") i32 (i32.const 1540))
  (global $G_CBLEN (export "GEO_codebook_len") i32 (i32.const 1544))
  (global $G_KVWIN (export "GEO_kv_window") i32 (i32.const 1548))
  (global $G_KVBITS (export "GEO_kv_bits") i32 (i32.const 1552))
  (global $G_VOCAB (export "GEO_vocab") i32 (i32.const 1556))
  (global $G_D (export "GEO_d_model") i32 (i32.const 1560))
  (global $G_H (export "GEO_num_heads") i32 (i32.const 1564))
  (global $G_KV (export "GEO_num_kv_heads") i32 (i32.const 1568))
  (global $G_L (export "GEO_num_layers") i32 (i32.const 1572))
  (global $G_HD (export "GEO_head_dim") i32 (i32.const 1576))
  (global $G_MAXSEQ (export "GEO_max_seq_len") i32 (i32.const 1580))
  (global $G_HADA (export "GEO_hada_n") i32 (i32.const 1584))
  (global $G_LANES (export "GEO_mhc_lanes") i32 (i32.const 1588))
  (global $G_SLOTS (export "GEO_engram_slots") i32 (i32.const 1592))
  (global $G_SUB (export "GEO_engram_sub_dim") i32 (i32.const 1596))
  (global $G_TABLES (export "GEO_num_engram_tables") i32 (i32.const 1600))
  (global $G_TAPS (export "GEO_engram_conv_taps") i32 (i32.const 1604))
  (global $G_DIL (export "GEO_engram_conv_dilation") i32 (i32.const 1608))
  (global $G_NORD (export "GEO_num_engram_orders") i32 (i32.const 1612))
  (global $G_ORD (export "GEO_engram_orders") i32 (i32.const 1616))
  (global $G_NSITE (export "GEO_num_engram_sites") i32 (i32.const 1632))
  (global $G_SITE (export "GEO_engram_sites") i32 (i32.const 1636))
  (global $G_THETA (export "GEO_rope_theta") i32 (i32.const 1652))
  (global $CODEBOOK (export "ADDR_CODEBOOK") i32 (i32.const 1664)) ;; CODEBOOK_LEN f32 as read: cb2 at +CB2, cb3 at +CB3, cb4 at +CB4
  (global $LEVELS i32 (i32.const 1792)) ;; f32 levels by raw index, LEVELS_STRIDE bytes per kind (KIND_*; $level_at)
  (global $CBQ    i32 (i32.const 2048)) ;; int8 levels, CBQ_STRIDE bytes per kind, for i8x16.swizzle ($kind_cbq)
  (global $CBS    i32 (i32.const 2112)) ;; f32 scale of the int8 levels, CBS_STRIDE bytes per kind ($kind_cbs)
  (global $PERM   i32 (i32.const 2176)) ;; column permutation per layout (LAYOUT_*), PERM_STRIDE bytes each ($perm_at)
  ;; Tokenizer fields
  (global $TOK_N     (export "ADDR_TOK_N") i32 (i32.const 2304)) ;; pieces (0: no tokenizer)
  (global $TOK_IDS   (export "ADDR_TOK_IDS") i32 (i32.const 2308)) ;; pad, eos, bos, unk (4 x u32)
  (global $TOK_DUMMY i32 (i32.const 2324)) ;; add_dummy_prefix
  (global $TOK_BYTEFB i32 (i32.const 2328)) ;; byte_fallback
  (global $P_TOK_PIECES i32 (i32.const 2332)) ;; -> PIECE_SIZE bytes per piece, fields PIECE_*: surface ptr, len, f32 score, type
  (global $P_TOK_HASH  i32 (i32.const 2336)) ;; -> open-addressing table of id+1 (mergeable pieces)
  (global $TOK_MASK  i32 (i32.const 2340)) ;; its size - 1
  (global $P_TOK_MARK  i32 (i32.const 2344)) ;; -> USER_DEFINED ids, longest surface first
  (global $TOK_NMARK i32 (i32.const 2348)) ;; their count
  (global $P_TOK_BYTE  i32 (i32.const 2352)) ;; -> 256 i32: id of byte piece <0xHH>, -1 if none
  (global $P_TOK_SYM   i32 (i32.const 2356)) ;; -> BPE scratch: SYM_SIZE bytes per symbol, fields SYM_* ($ensure grows it)
  (global $TOK_SYMCAP i32 (i32.const 2360)) ;; bytes it holds (at P_TOK_SYM + BLOCK_CAP)
  (global $P_TOK_NORM  i32 (i32.const 2364)) ;; -> normalised text scratch
  (global $TOK_NORMCAP i32 (i32.const 2368)) ;; bytes it holds (at P_TOK_NORM + BLOCK_CAP: $ensure grows it)
  (global $P_TOK_BLOB (export "ADDR_TOK_BLOB") i32 (i32.const 2372)) ;; -> the tokenizer record's blob, where it lies in the archive
  (global $TOK_BLOBLEN (export "ADDR_TOK_BLOBLEN") i32 (i32.const 2376)) ;; its length in bytes (the tool-call module reads the blob)
  (global $P_TOK_HEAP i32 (i32.const 2380)) ;; -> BPE merge candidates, a binary heap of CAND_SIZE-byte entries, fields CAND_*
  (global $TOK_HEAPCAP i32 (i32.const 2384)) ;; bytes it holds (at P_TOK_HEAP + BLOCK_CAP: $ensure grows it)
  (global $TOK_HEAPN i32 (i32.const 2388))  ;; entries in it
  ;; Sampler fields
  (global $S_TEMP (export "ADDR_S_TEMP") i32 (i32.const 2432)) ;; f32 temperature (<= 0: greedy)
  (global $S_TOPK (export "ADDR_S_TOPK") i32 (i32.const 2436)) ;; top-k (0: off)
  (global $S_TOPP (export "ADDR_S_TOPP") i32 (i32.const 2440)) ;; f32 top-p (>= 1: off)
  (global $S_MINP (export "ADDR_S_MINP") i32 (i32.const 2444)) ;; f32 min-p (0: off)
  (global $S_REP  (export "ADDR_S_REP")  i32 (i32.const 2448)) ;; f32 repetition penalty (1: off)
  (global $S_REPN (export "ADDR_S_REPN") i32 (i32.const 2452)) ;; penalty window in tokens (0: whole session)
  (global $S_RNG  (export "ADDR_S_RNG")  i32 (i32.const 2456)) ;; u64 generator state (splitmix64)
  (global $EXPECT i32 (i32.const 2560)) ;; the record $check_record expects: fields EX_* (dtype, ndim, shape)
  (global $QTMP   i32 (i32.const 2688)) ;; 32 bytes: a key's int8 block on its way into its column ($kv_store, driver only)
  (global $MATHTAB (export "ADDR_MATHTAB") i32 (i32.const 2816)) ;; 256 bytes: f64 T[j] ~ 2^(j/32) of expf, made by init
  (global $BSLICES i32 (i32.const 3072)) ;; 16 x SL_SIZE bytes: a chunk's per-token slices, fields SL_* (field, base, stride)
  (global $BSAVED  i32 (i32.const 3264)) ;; 116 bytes: the pointer fields P_U .. P_EV as they were before a chunk
  (global $CHUNK (export "PREFILL_CHUNK") i32 (i32.const 32)) ;; tokens per chunk of a batched prefill
  (global $FUSED   i32 (i32.const 3392)) ;; 4 x FU_SIZE bytes: the products of one fused job, fields FU_* (matrix, output)
  (global $FUSED_N i32 (i32.const 3424)) ;; how many
  (global $BFUSED  i32 (i32.const 3440)) ;; 4 x BF_SIZE bytes: one batched job's products, fields BF_* (matrix, output field, base, stride)
  (global $BFUSED_N i32 (i32.const 3504)) ;; how many
  (global $BFUSED_T i32 (i32.const 3508)) ;; tokens of the chunk
  (global $HEAP_BASE (export "HEAP_BASE") i32 (i32.const 65536))
  ;; Job functions (indices in $jobs), also the job field of a job-log record
  (global $JOB_MATVEC    (export "JOB_MATVEC")    i32 (i32.const 0))  ;; rows of one product
  (global $JOB_ATTENTION (export "JOB_ATTENTION") i32 (i32.const 1))  ;; query heads of one layer
  (global $JOB_BATCH     (export "JOB_BATCH")     i32 (i32.const 2))  ;; rows of a prefill chunk's products
  (global $JOB_FUSED     (export "JOB_FUSED")     i32 (i32.const 3))  ;; rows of products that share an input
  (global $JOB_TEST_FILL i32 (i32.const 12))                          ;; test-only (test_pool)
  (global $ROW_KERNEL      i32 (i32.const 4))   ;; + kind (KIND_*): the general row kernel of that kind
  (global $ROW_KERNEL_QUAD i32 (i32.const 8))   ;; + kind: the four-block kernel (groups of 128k)
  ;; The job at JOB, written by $run_job, read by $work
  (global $JOB_FN    i32 (i32.const 0))   ;; job function (index in $jobs: JOB_*)
  (global $JOB_COUNT i32 (i32.const 4))   ;; items in the job
  (global $JOB_CHUNK i32 (i32.const 8))   ;; items a thread claims at once
  ;; ARGS of JOB_MATVEC ($product)
  (global $MV_MATRIX i32 (i32.const 0))   ;; -> the matrix's descriptor
  (global $MV_OUT    i32 (i32.const 4))   ;; -> f32 output: row MV_FIRST goes to element 0
  (global $MV_FIRST  i32 (i32.const 8))   ;; first row of the product
  ;; ARGS of JOB_ATTENTION ($key_range): the keys are the sinks [0, sinkEnd) and the window [windowBegin, p]
  (global $ATT_LAYER        i32 (i32.const 0))   ;; layer
  (global $ATT_SINK_END     i32 (i32.const 4))   ;; sinkEnd
  (global $ATT_WINDOW_BEGIN i32 (i32.const 8))   ;; windowBegin
  (global $ATT_KEYS         i32 (i32.const 12))  ;; keys in all
  (global $ATT_PAIRED       i32 (i32.const 16))  ;; 1: an item is a pair of query heads that read one KV head
  ;; ARGS of JOB_TEST_FILL (test_pool)
  (global $FILL_ARRAY i32 (i32.const 0))  ;; -> the u32 array
  (global $FILL_TOTAL i32 (i32.const 4))  ;; items processed (atomic)
  ;; A job-log record: what it spans, and where its fields lie
  (global $JOBLOG_BYTES (export "JOBLOG_BYTES") i32 (i32.const 32))
  (global $JL_KIND  (export "JOBLOG_AT_KIND")  i32 (i32.const 0))   ;; u8: JOBLOG_KIND_*
  (global $JL_JOB   (export "JOBLOG_AT_JOB")   i32 (i32.const 1))   ;; u8: JOB_* (chunk and job records)
  (global $JL_SLOT  (export "JOBLOG_AT_SLOT")  i32 (i32.const 2))   ;; u16: thread slot (0: the driver)
  (global $JL_ITEMS (export "JOBLOG_AT_ITEMS") i32 (i32.const 4))   ;; u32: items (rows, heads; prefill: ids)
  (global $JL_START (export "JOBLOG_AT_START") i32 (i32.const 8))   ;; f64: start, ms (the host's clock)
  (global $JL_END   (export "JOBLOG_AT_END")   i32 (i32.const 16))  ;; f64: end, ms
  (global $JL_POS   (export "JOBLOG_AT_POS")   i32 (i32.const 24))  ;; u32: the session position at the end
  (global $JOBLOG_CHUNK   (export "JOBLOG_KIND_CHUNK")   i32 (i32.const 0)) ;; a thread ran items of a job
  (global $JOBLOG_JOB     (export "JOBLOG_KIND_JOB")     i32 (i32.const 1)) ;; the driver, from publishing a job to its last item
  (global $JOBLOG_STEP    (export "JOBLOG_KIND_STEP")    i32 (i32.const 2)) ;; one step
  (global $JOBLOG_PREFILL (export "JOBLOG_KIND_PREFILL") i32 (i32.const 3)) ;; one prefill call

  ;; The archive (docs/archive-format.md): the header [0, HEADER_BYTES), copied to GEO (fields G_*); the
  ;; CODEBOOK_LEN f32 codebooks right after it, copied to CODEBOOK; the directory right after them, DIR_SIZE
  ;; bytes per record ($rec_at), fields DIR_*; then the blobs. CB* count from the codebooks' start, DIR_* from the entry's.
  (global $TAG i32 (i32.const 0x05E12A83))          ;; u32 at offset 0: a Needle 2 archive
  (global $TAG_NEEDLE1 i32 (i32.const 0x05E12A82))  ;; a Needle 1 archive (ERR_NEEDLE1)
  (global $TAG_NEEDLE3 i32 (i32.const 0x05E12A84))  ;; a Needle 3 archive (ERR_NEEDLE3)
  (global $HEADER_BYTES i32 (i32.const 120))        ;; 29 u32, then rope_theta as f32
  (global $CODEBOOK_LEN i32 (i32.const 28))         ;; f32 codebook entries (the header's codebook_len must equal it)
  (global $CB2 i32 (i32.const 0))                   ;; cb2[4], from the codebooks' start
  (global $CB3 i32 (i32.const 16))                  ;; cb3[8]
  (global $CB4 i32 (i32.const 48))                  ;; cb4[16]
  ;; Record i's directory entry at HEADER_BYTES + 4 CODEBOOK_LEN + DIR_SIZE i ($rec_at), packed; its fields ($dir_*):
  (global $DIR_DTYPE i32 (i32.const 0))    ;; u8 dtype (DT_*)
  (global $DIR_NDIM i32 (i32.const 1))     ;; u8 ndim: <= DIR_DIMS, 0 for RAW
  (global $DIR_ZERO i32 (i32.const 2))     ;; u16, must be 0
  (global $DIR_SHAPE i32 (i32.const 4))    ;; u32 shape[DIR_DIMS]: entries past ndim are 0
  (global $DIR_OFFSET i32 (i32.const 20))  ;; u64 absolute offset of the blob in the archive
  (global $DIR_LENGTH i32 (i32.const 28))  ;; u64 blob length in bytes
  (global $DIR_GROUP i32 (i32.const 36))   ;; u32 CQ group (0 otherwise)
  (global $DIR_BITS i32 (i32.const 40))    ;; u32 CQ bits: 2, 3, 4 or BITS_TERNARY (0 otherwise)
  (global $DIR_SIZE i32 (i32.const 44))
  (global $DIR_DIMS i32 (i32.const 4))     ;; shape entries
  ;; dtype codes of a directory entry
  (global $DT_FP16 i32 (i32.const 1))
  (global $DT_FP32 i32 (i32.const 2))      ;; never written by v2; accepted where the layout says FP16
  (global $DT_CQ i32 (i32.const 3))
  (global $DT_RAW i32 (i32.const 4))       ;; the tokenizer
  (global $BITS_TERNARY i32 (i32.const 5)) ;; CQ bits of a ternary record: 2-bit crumbs, levels {-c, 0, +c}/sqrt(group)

  ;; The records of host/layout.cpp in directory order: the embedding; LAYER_RECORDS per layer (fields
  ;; L_*, $r_layer); the MHC_RECORDS of mHC (M_*, $r_mhc); ENGRAM_RECORDS per engram site (E_*,
  ;; $r_engram); the final norm; then the optional heads (a manifest, HEAD_RECORDS per head) and tokenizer.
  (global $LAYER_RECORDS i32 (i32.const 14))
  (global $L_NORM_IN i32 (i32.const 0))
  (global $L_Q i32 (i32.const 1))
  (global $L_K i32 (i32.const 2))
  (global $L_V i32 (i32.const 3))
  (global $L_Q_NORM i32 (i32.const 4))
  (global $L_K_NORM i32 (i32.const 5))
  (global $L_GATE i32 (i32.const 6))
  (global $L_OUT i32 (i32.const 7))
  (global $L_POST_NORM i32 (i32.const 8))
  (global $L_ATTN_GATE i32 (i32.const 9))
  (global $L_PRE_HADA i32 (i32.const 10))
  (global $L_D1 i32 (i32.const 11))
  (global $L_D2 i32 (i32.const 12))
  (global $L_D3 i32 (i32.const 13))
  (global $MHC_RECORDS i32 (i32.const 9))
  (global $M_A_PRE i32 (i32.const 0))
  (global $M_A_POST i32 (i32.const 1))
  (global $M_A_RES i32 (i32.const 2))
  (global $M_B_PRE i32 (i32.const 3))
  (global $M_B_POST i32 (i32.const 4))
  (global $M_B_RES i32 (i32.const 5))
  (global $M_PHI_PRE i32 (i32.const 6))
  (global $M_PHI_POST i32 (i32.const 7))
  (global $M_PHI_RES i32 (i32.const 8))
  (global $ENGRAM_RECORDS i32 (i32.const 4))
  (global $E_TABLES i32 (i32.const 0))
  (global $E_KEY i32 (i32.const 1))
  (global $E_VALUE i32 (i32.const 2))
  (global $E_TAPS i32 (i32.const 3))
  (global $HEAD_RECORDS i32 (i32.const 3))   ;; fields HR_*
  (global $HR_PROBES i32 (i32.const 0))
  (global $HR_PROJ i32 (i32.const 1))
  (global $HR_BIAS i32 (i32.const 2))

  ;; Descriptor of record i at P_RECS + D_SIZE i (host/layout.cpp's records, made by load), its fields:
  (global $D_DTYPE i32 (i32.const 0))     ;; dtype (DT_*)
  (global $D_BITS i32 (i32.const 4))      ;; CQ bits (BITS_TERNARY: ternary)
  (global $D_ROWS i32 (i32.const 8))      ;; rows
  (global $D_COLS i32 (i32.const 12))      ;; columns
  (global $D_PAD i32 (i32.const 16))       ;; columns padded to the group
  (global $D_GROUP i32 (i32.const 20))     ;; CQ group
  (global $D_DATA i32 (i32.const 24))      ;; -> packed bytes (CQ, in the archive) or f32 floats (FP16/FP32, widened at load)
  (global $D_NORMS i32 (i32.const 28))     ;; -> fp16 group norms (CQ)
  (global $D_ROW_BYTES i32 (i32.const 32)) ;; bytes per packed row
  (global $D_KIND i32 (i32.const 36))      ;; level kind (KIND_*, $kind_of its bits)
  (global $D_GROUPS i32 (i32.const 40))    ;; groups per row
  (global $D_ELEMENTS i32 (i32.const 44))  ;; elements
  (global $D_SIZE i32 (i32.const 48))
  ;; The level kind of a CQ matrix (D_KIND): which levels its raw indices take. It indexes the level
  ;; tables LEVELS, CBQ and CBS and the row kernels in $jobs (ROW_KERNEL + kind, ROW_KERNEL_QUAD + kind).
  (global $KIND_2BIT    i32 (i32.const 0))  ;; bits 2: cb2 (the three bit widths in order: KIND_2BIT + bits - 2)
  (global $KIND_3BIT    i32 (i32.const 1))  ;; bits 3: cb3
  (global $KIND_4BIT    i32 (i32.const 2))  ;; bits 4: cb4
  (global $KIND_TERNARY i32 (i32.const 3))  ;; bits BITS_TERNARY: {0, +1, 0, -1} x c/sqrt(group)
  (global $KINDS        i32 (i32.const 4))
  (global $LEVELS_STRIDE i32 (i32.const 64))  ;; bytes of LEVELS per kind: 16 f32, by raw index
  (global $CBQ_STRIDE    i32 (i32.const 16))  ;; bytes of CBQ per kind: 16 int8, one v128
  (global $CBS_STRIDE    i32 (i32.const 4))   ;; bytes of CBS per kind: one f32
  (global $TERNARY_PLUS  i32 (i32.const 1))   ;; raw index of +c in a ternary matrix
  (global $TERNARY_MINUS i32 (i32.const 3))   ;; raw index of -c (indices 0 and 2 are 0)
  ;; The column layout of a prepared activation for a kind ($layout): the order in which its kernel
  ;; expands a block of 32 packed indices; the layout's permutation is at PERM + PERM_STRIDE layout.
  (global $LAYOUT_CRUMBS  i32 (i32.const 0))  ;; 2-bit and ternary: crumb t of byte j is column 4j + t
  (global $LAYOUT_WORDS3  i32 (i32.const 1))  ;; 3-bit: index t of 24-bit word m is column 8m + t
  (global $LAYOUT_NIBBLES i32 (i32.const 2))  ;; 4-bit: the low nibble of byte j is column 2j, the high 2j + 1
  (global $PERM_STRIDE    i32 (i32.const 32)) ;; bytes per permutation: one per column of a block

  ;; Descriptor of probe head h at P_HEADS + H_SIZE h (docs/model.md "Probe heads"), its fields:
  (global $H_CODE i32 (i32.const 0))      ;; HEAD_CONTRASTIVE or HEAD_CONFIDENCE
  (global $H_PROBES i32 (i32.const 4))    ;; P probes (CONTRASTIVE_PROBES or CONFIDENCE_PROBES: the format fixes them; <= $max_probes)
  (global $H_OUTPUTS i32 (i32.const 8))   ;; outputs
  (global $H_PROBES_T i32 (i32.const 12))  ;; -> probes transposed, [d][P] f32
  (global $H_RUN_MAX i32 (i32.const 16))   ;; -> running max per probe [P] f32
  (global $H_RUN_SUM i32 (i32.const 20))   ;; -> running sum [P]
  (global $H_RUN_ACC i32 (i32.const 24))   ;; -> running weighted cell sum [P][d] f32
  (global $H_RECORD i32 (i32.const 28))    ;; record index of its first record (+ HR_*)
  (global $H_SIZE i32 (i32.const 32))
  ;; The codes of the heads manifest (stored as floats), and the probes and outputs the format fixes for each
  (global $HEAD_CONTRASTIVE i32 (i32.const 1))
  (global $HEAD_CONFIDENCE i32 (i32.const 2))
  (global $CONTRASTIVE_PROBES i32 (i32.const 4))
  (global $CONTRASTIVE_OUTPUTS i32 (i32.const 128))  ;; an L2-normalised embedding
  (global $CONFIDENCE_PROBES i32 (i32.const 8))
  (global $CONFIDENCE_OUTPUTS i32 (i32.const 1))

  ;; The record at EXPECT ($set_expect), which $check_record compares a directory entry with:
  (global $EX_DTYPE i32 (i32.const 0))    ;; dtype
  (global $EX_NDIM i32 (i32.const 4))     ;; ndim
  (global $EX_SHAPE i32 (i32.const 8))    ;; shape[DIR_DIMS], u64 each ($expect_dim)

  ;; Entry k of FUSED at FUSED + FU_SIZE k ($fuse), its fields:
  (global $FU_MATRIX i32 (i32.const 0))   ;; -> the matrix's descriptor
  (global $FU_OUT i32 (i32.const 4))      ;; -> f32 output, all the matrix's rows
  (global $FU_SIZE i32 (i32.const 8))

  ;; Entry k of BFUSED at BFUSED + BF_SIZE k ($bfuse), its fields:
  (global $BF_MATRIX i32 (i32.const 0))   ;; -> the matrix's descriptor
  (global $BF_FIELD i32 (i32.const 4))    ;; the output's pointer field (one of BSLICES')
  (global $BF_BASE i32 (i32.const 8))     ;; -> token 0's slice of that field
  (global $BF_STRIDE i32 (i32.const 12))  ;; bytes from one token's slice to the next
  (global $BF_SIZE i32 (i32.const 16))

  ;; Entry idx of BSLICES at BSLICES + SL_SIZE idx ($slice), its fields:
  (global $SL_FIELD i32 (i32.const 0))    ;; the pointer field sliced (P_U ...); 0 ends the table
  (global $SL_BASE i32 (i32.const 4))     ;; -> token 0's slice (CHUNK slices)
  (global $SL_STRIDE i32 (i32.const 8))   ;; bytes from one slice to the next
  (global $SL_SIZE i32 (i32.const 12))

  ;; The snapshot block's header (the session it saves follows, as $snap_walk moves it):
  (global $SN_POS i32 (i32.const 0))      ;; POS
  (global $SN_SINK i32 (i32.const 4))     ;; SINK
  (global $SN_HEADS_ON i32 (i32.const 8)) ;; HEADS_ON: head pooling on
  (global $SN_POOLED i32 (i32.const 12))  ;; POOLED: cells pooled
  (global $SN_HEADER i32 (i32.const 64))  ;; header bytes

  ;; The tokenizer blob (docs/tokenizer.md, "The blob"; read in place by $tok_load): header fields
  (global $TB_N_PIECES i32 (i32.const 0))           ;; u32 n_pieces
  (global $TB_PAD_ID i32 (i32.const 4))             ;; u32 pad_id, eos_id, bos_id, unk_id (copied to TOK_IDS)
  (global $TB_ADD_DUMMY_PREFIX i32 (i32.const 20))  ;; u8 add_dummy_prefix
  (global $TB_BYTE_FALLBACK i32 (i32.const 21))     ;; u8 byte_fallback
  (global $TB_RESERVED i32 (i32.const 22))          ;; u16 reserved
  (global $TB_RECORDS i32 (i32.const 24))           ;; the n records, in id order
  ;; ... and the fields of a record
  (global $TR_SCORE i32 (i32.const 0))              ;; f32 score
  (global $TR_TYPE i32 (i32.const 4))               ;; u8 type (TYPE_*)
  (global $TR_SURFACE_LEN i32 (i32.const 5))        ;; u16 surface_len
  (global $TR_SURFACE i32 (i32.const 7))            ;; surface_len bytes of surface
  ;; Piece types
  (global $TYPE_NORMAL i32 (i32.const 0))
  (global $TYPE_UNKNOWN i32 (i32.const 1))
  (global $TYPE_CONTROL i32 (i32.const 2))
  (global $TYPE_USER_DEFINED i32 (i32.const 3))
  (global $TYPE_BYTE i32 (i32.const 4))
  (global $IDS_UNK i32 (i32.const 12))    ;; TOK_IDS + IDS_UNK: unk_id (TOK_IDS holds pad, eos, bos, unk)

  ;; Piece id's entry at P_TOK_PIECES + PIECE_SIZE id ($piece, made by $tok_load), its fields:
  (global $PIECE_SURFACE i32 (i32.const 0))  ;; -> its surface, where it lies in the archive
  (global $PIECE_LEN i32 (i32.const 4))      ;; surface bytes
  (global $PIECE_SCORE i32 (i32.const 8))    ;; f32 score
  (global $PIECE_TYPE i32 (i32.const 12))    ;; TYPE_*
  (global $PIECE_SIZE i32 (i32.const 16))

  ;; Symbol i of the BPE scratch at P_TOK_SYM + SYM_SIZE i ($sym), its fields:
  (global $SYM_BEGIN i32 (i32.const 0))   ;; first byte, as an offset into the normalised text
  (global $SYM_BYTES i32 (i32.const 4))   ;; bytes it spans (0: merged away)
  (global $SYM_PREV i32 (i32.const 8))    ;; previous symbol (-1: none)
  (global $SYM_NEXT i32 (i32.const 12))   ;; next symbol (-1: none)
  (global $SYM_FROZEN i32 (i32.const 16)) ;; 1 for a marker: never merged
  (global $SYM_SIZE i32 (i32.const 28))   ;; (+20..27 unused)

  ;; Merge candidate k of the heap at P_TOK_HEAP + CAND_SIZE k ($hent), its fields:
  (global $CAND_SCORE i32 (i32.const 0))  ;; f32 score of the merged piece
  (global $CAND_LEFT i32 (i32.const 4))   ;; left symbol
  (global $CAND_RIGHT i32 (i32.const 8))  ;; right symbol
  (global $CAND_BYTES i32 (i32.const 12)) ;; bytes of the merged piece
  (global $CAND_SIZE i32 (i32.const 16))  ;; one v128 ($hswap moves an entry as one)

  ;; A block that $ensure grows: its pointer field, then its capacity in bytes at +BLOCK_CAP
  (global $BLOCK_CAP i32 (i32.const 4))

  ;; ------------------------------------------------------------------------------------------
  ;; Error codes (ADDR_ERR_RECORD names the record, ADDR_ERR_DETAIL the header offset or piece)
  ;; ------------------------------------------------------------------------------------------
  (global $ERR_OK        (export "ERR_OK")        i32 (i32.const 0))
  (global $ERR_MEMORY    (export "ERR_MEMORY")    i32 (i32.const 1))  ;; the memory cannot grow
  (global $ERR_TAG       (export "ERR_TAG")       i32 (i32.const 2))  ;; not a Needle archive
  (global $ERR_NEEDLE1   (export "ERR_NEEDLE1")   i32 (i32.const 3))  ;; Needle 1 tag
  (global $ERR_NEEDLE3   (export "ERR_NEEDLE3")   i32 (i32.const 4))  ;; Needle 3 tag
  (global $ERR_TRUNCATED (export "ERR_TRUNCATED") i32 (i32.const 5))  ;; header/codebooks/directory cut short
  (global $ERR_GEOMETRY  (export "ERR_GEOMETRY")  i32 (i32.const 6))  ;; a header rule (detail: field offset)
  (global $ERR_CODEBOOK  (export "ERR_CODEBOOK")  i32 (i32.const 7))  ;; a codebook float is not finite
  (global $ERR_COUNT     (export "ERR_COUNT")     i32 (i32.const 8))  ;; num_tensors does not fit the layout
  (global $ERR_DTYPE     (export "ERR_DTYPE")     i32 (i32.const 9))  ;; dtype unknown or not the layout's
  (global $ERR_FIELDS    (export "ERR_RECORD")    i32 (i32.const 10)) ;; reserved bytes, ndim, unused shape entries
  (global $ERR_SHAPE     (export "ERR_SHAPE")     i32 (i32.const 11)) ;; shape differs from the geometry's
  (global $ERR_GROUP     (export "ERR_GROUP")     i32 (i32.const 12)) ;; CQ group (or group/bits on a non-CQ record)
  (global $ERR_BITS      (export "ERR_BITS")      i32 (i32.const 13)) ;; CQ bits not 2, 3, 4, 5
  (global $ERR_LENGTH    (export "ERR_LENGTH")    i32 (i32.const 14)) ;; blob length differs from the shape's
  (global $ERR_OFFSET    (export "ERR_OFFSET")    i32 (i32.const 15)) ;; blob starts inside header/directory
  (global $ERR_BOUNDS    (export "ERR_BOUNDS")    i32 (i32.const 16)) ;; blob ends past the archive
  (global $ERR_MANIFEST  (export "ERR_MANIFEST")  i32 (i32.const 17)) ;; head code not 1 or 2
  (global $ERR_TOKENIZER (export "ERR_TOKENIZER") i32 (i32.const 18)) ;; tokenizer blob invalid (detail: piece)
  (global $ERR_VOCAB     (export "ERR_VOCAB")     i32 (i32.const 19)) ;; more pieces than vocab
  ;; (20 is unused: it was "valid but unsupported", before the format itself required head_dim % 32 == 0)
  (global $ERR_NOT_LOADED (export "ERR_NOT_LOADED") i32 (i32.const 21))
  (global $ERR_TOKEN     (export "ERR_TOKEN")     i32 (i32.const 22)) ;; token id past the vocabulary
  (global $ERR_FULL      (export "ERR_FULL")      i32 (i32.const 23)) ;; position would reach max_seq_len
  (global $ERR_UTF8      (export "ERR_UTF8")      i32 (i32.const 24)) ;; invalid UTF-8 text
  (global $ERR_NO_TOKENIZER (export "ERR_NO_TOKENIZER") i32 (i32.const 25))
  (global $ERR_CAPACITY  (export "ERR_CAPACITY")  i32 (i32.const 26)) ;; output buffer too small
  (global $ERR_ARG       (export "ERR_ARG")       i32 (i32.const 27)) ;; bad argument
  (global $ERR_MASK_EMPTY (export "ERR_MASK_EMPTY") i32 (i32.const 28)) ;; the token mask allows no token
  (global $ERR_NO_HEAD   (export "ERR_NO_HEAD")   i32 (i32.const 29)) ;; no such probe head in the archive
  (global $ERR_NO_CELLS  (export "ERR_NO_CELLS")  i32 (i32.const 30)) ;; head pooling off, or no position pooled yet
  (global $ERR_NO_SNAPSHOT (export "ERR_NO_SNAPSHOT") i32 (i32.const 31)) ;; snapshot_restore with no snapshot saved since load

  ;; ------------------------------------------------------------------------------------------
  ;; Memory: the bump allocator
  ;; ------------------------------------------------------------------------------------------

  ;; Returns a 64-byte aligned, zeroed block of n bytes, or 0 if the memory cannot grow.
  (func $alloc (export "alloc") (param $n i32) (result i32)
    (local $p i32) (local $end i32) (local $have i32)
    (local.set $p (i32.load (global.get $HEAP_TOP)))
    (if (i32.lt_u (local.get $p) (global.get $HEAP_BASE)) (then (local.set $p (global.get $HEAP_BASE))))
    (local.set $p (i32.and (i32.add (local.get $p) (i32.const 63)) (i32.const -64)))
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (if (i32.lt_u (local.get $end) (local.get $p)) (then (return (i32.const 0))))  ;; wrapped
    (local.set $have (i32.mul (memory.size) (i32.const 65536)))
    (if (i32.or (i32.gt_u (local.get $end) (local.get $have)) (i32.eqz (memory.size)))
      (then
        (if (i32.lt_s
              (memory.grow (i32.sub (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16))
                                    (memory.size)))
              (i32.const 0))
          (then (return (i32.const 0))))))
    (i32.store (global.get $HEAP_TOP) (local.get $end))
    (memory.fill (local.get $p) (i32.const 0) (local.get $n))  ;; a reset heap hands out used memory
    (local.get $p))

  ;; Forgets every block: the next load starts from an empty heap.
  (func $heap_reset
    (i32.store (global.get $HEAP_TOP) (global.get $HEAP_BASE)))

  ;; Fills n bytes at p with zero (blocks reused across sessions).
  (func $zero (param $p i32) (param $n i32)
    (memory.fill (local.get $p) (i32.const 0) (local.get $n)))

  ;; ------------------------------------------------------------------------------------------
  ;; Math: the transcendentals of docs/numerics.md (f64 exp, log, sin, cos; f32 exp, log), fp16
  ;; ------------------------------------------------------------------------------------------

  ;; e^x in f64: x = k ln2 + r, |r| <= ln2/2, Taylor series on r, 2^k from the exponent bits.
  (func $exp64 (export "test_exp64") (param $x f64) (result f64)
    (local $k f64) (local $r f64) (local $s f64) (local $t f64) (local $i i32) (local $ki i32)
    (if (f64.ne (local.get $x) (local.get $x)) (then (return (local.get $x))))
    (if (f64.gt (local.get $x) (f64.const 709.782712893384)) (then (return (f64.const inf))))
    (if (f64.lt (local.get $x) (f64.const -745.2)) (then (return (f64.const 0))))
    (local.set $k (f64.nearest (f64.mul (local.get $x) (f64.const 1.4426950408889634))))
    ;; ln 2 split so that k * LN2_HI is exact for |k| < 2^11
    (local.set $r (f64.sub (f64.sub (local.get $x) (f64.mul (local.get $k) (f64.const 0x1.62e42fee00000p-1)))
                           (f64.mul (local.get $k) (f64.const 0x1.a39ef35793c76p-33))))
    ;; sum_{i=0..15} r^i / i! in Horner form: 1 + r/1 (1 + r/2 (1 + ... (1 + r/15)))
    (local.set $s (f64.const 1))
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.06666666666666667)) (local.get $s))))  ;; 1/15
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.07142857142857142)) (local.get $s))))  ;; 1/14
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.07692307692307693)) (local.get $s))))  ;; 1/13
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.08333333333333333)) (local.get $s))))  ;; 1/12
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.09090909090909091)) (local.get $s))))  ;; 1/11
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.1)) (local.get $s))))  ;; 1/10
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.1111111111111111)) (local.get $s))))  ;; 1/9
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.125)) (local.get $s))))  ;; 1/8
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.14285714285714285)) (local.get $s))))  ;; 1/7
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.16666666666666666)) (local.get $s))))  ;; 1/6
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.2)) (local.get $s))))  ;; 1/5
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.25)) (local.get $s))))  ;; 1/4
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.3333333333333333)) (local.get $s))))  ;; 1/3
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 0.5)) (local.get $s))))  ;; 1/2
    (local.set $s (f64.add (f64.const 1) (f64.mul (f64.mul (local.get $r) (f64.const 1)) (local.get $s))))  ;; 1/1
    (local.set $ki (i32.trunc_f64_s (local.get $k)))
    ;; 2^k in two halves so that subnormal results and k = 1024 stay exact
    (local.set $t (f64.reinterpret_i64 (i64.shl (i64.extend_i32_s
        (i32.add (i32.shr_s (local.get $ki) (i32.const 1)) (i32.const 1023))) (i64.const 52))))
    (f64.mul (f64.mul (local.get $s) (local.get $t))
      (f64.reinterpret_i64 (i64.shl (i64.extend_i32_s
        (i32.add (i32.sub (local.get $ki) (i32.shr_s (local.get $ki) (i32.const 1))) (i32.const 1023))) (i64.const 52)))))

  ;; ln x in f64: x = 2^e m, m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)) by its series.
  (func $log64 (export "test_log64") (param $x f64) (result f64)
    (local $bits i64) (local $e i32) (local $m f64) (local $s f64) (local $s2 f64) (local $sum f64)
    (local $term f64) (local $i i32)
    (if (f64.ne (local.get $x) (local.get $x)) (then (return (local.get $x))))
    (if (f64.lt (local.get $x) (f64.const 0)) (then (return (f64.const nan))))
    (if (f64.eq (local.get $x) (f64.const 0)) (then (return (f64.const -inf))))
    (if (f64.eq (local.get $x) (f64.const inf)) (then (return (local.get $x))))
    (local.set $e (i32.const 0))
    (if (f64.lt (local.get $x) (f64.const 0x1p-1022))  ;; subnormal: scale into the normal range
      (then (local.set $x (f64.mul (local.get $x) (f64.const 0x1p54)))
            (local.set $e (i32.const -54))))
    (local.set $bits (i64.reinterpret_f64 (local.get $x)))
    (local.set $e (i32.add (local.get $e)
      (i32.sub (i32.wrap_i64 (i64.shr_u (local.get $bits) (i64.const 52))) (i32.const 1023))))
    (local.set $m (f64.reinterpret_i64 (i64.or (i64.and (local.get $bits) (i64.const 0x000fffffffffffff))
                                               (i64.const 0x3ff0000000000000))))
    (if (f64.gt (local.get $m) (f64.const 1.4142135623730951))
      (then (local.set $m (f64.mul (local.get $m) (f64.const 0.5)))
            (local.set $e (i32.add (local.get $e) (i32.const 1)))))
    (local.set $s (f64.div (f64.sub (local.get $m) (f64.const 1)) (f64.add (local.get $m) (f64.const 1))))
    (local.set $s2 (f64.mul (local.get $s) (local.get $s)))
    ;; atanh series: s + s^3/3 + ... + s^25/25, Horner in s^2 from the top
    (local.set $sum (f64.const 0))
    (local.set $i (i32.const 25))
    (loop $h
      (local.set $sum (f64.add (f64.div (f64.const 1) (f64.convert_i32_s (local.get $i)))
                               (f64.mul (local.get $s2) (local.get $sum))))
      (local.set $i (i32.sub (local.get $i) (i32.const 2)))
      (br_if $h (i32.gt_s (local.get $i) (i32.const 0))))
    (local.set $term (f64.mul (f64.const 2) (f64.mul (local.get $s) (local.get $sum))))
    (f64.add (f64.mul (f64.convert_i32_s (local.get $e)) (f64.const 0x1.62e42fee00000p-1))
      (f64.add (f64.mul (f64.convert_i32_s (local.get $e)) (f64.const 0x1.a39ef35793c76p-33))
               (local.get $term))))

  ;; sin(r) and cos(r) for |r| <= pi/4 by Taylor series (to r^23 and r^22).
  (func $sin_kernel (param $r f64) (result f64)
    (local $r2 f64) (local $s f64) (local $i i32)
    (local.set $r2 (f64.mul (local.get $r) (local.get $r)))
    (local.set $s (f64.const 1))
    (local.set $i (i32.const 23))
    (loop $h  ;; s = 1 - r^2/((i-1) i) s, from the top
      (local.set $s (f64.sub (f64.const 1) (f64.div (f64.mul (local.get $r2) (local.get $s))
        (f64.convert_i32_s (i32.mul (local.get $i) (i32.sub (local.get $i) (i32.const 1)))))))
      (local.set $i (i32.sub (local.get $i) (i32.const 2)))
      (br_if $h (i32.gt_s (local.get $i) (i32.const 1))))
    (f64.mul (local.get $r) (local.get $s)))
  ;; cos(r) for |r| <= pi/4.
  (func $cos_kernel (param $r f64) (result f64)
    (local $r2 f64) (local $s f64) (local $i i32)
    (local.set $r2 (f64.mul (local.get $r) (local.get $r)))
    (local.set $s (f64.const 1))
    (local.set $i (i32.const 22))
    (loop $h
      (local.set $s (f64.sub (f64.const 1) (f64.div (f64.mul (local.get $r2) (local.get $s))
        (f64.convert_i32_s (i32.mul (local.get $i) (i32.sub (local.get $i) (i32.const 1)))))))
      (local.set $i (i32.sub (local.get $i) (i32.const 2)))
      (br_if $h (i32.gt_s (local.get $i) (i32.const 0))))
    (local.get $s))

  ;; sin (which = 0) or cos (which = 1) of x: Cody-Waite reduction by pi/2 in three parts, then the
  ;; kernel chosen by the quadrant. Domain |x| < 2^30 (NaN beyond); the reduction is exact for
  ;; |x| < 2^20, and RoPE angles are below max_seq_len.
  (func $trig (param $x f64) (param $which i32) (result f64)
    (local $k f64) (local $r f64) (local $q i32)
    (if (i32.eqz (f64.lt (f64.abs (local.get $x)) (f64.const 0x1p30))) (then (return (f64.const nan))))
    (local.set $k (f64.nearest (f64.mul (local.get $x) (f64.const 0.6366197723675814))))
    (local.set $r (f64.sub (f64.sub (f64.sub (local.get $x)
        (f64.mul (local.get $k) (f64.const 0x1.921fb54400000p0)))
        (f64.mul (local.get $k) (f64.const 0x1.0b4611a600000p-34)))
        (f64.mul (local.get $k) (f64.const 0x1.3198a2e037073p-69))))
    (local.set $q (i32.and (i32.add (i32.wrap_i64 (i64.trunc_f64_s (local.get $k))) (local.get $which)) (i32.const 3)))
    (if (result f64) (i32.eq (local.get $q) (i32.const 0)) (then (call $sin_kernel (local.get $r)))
      (else (if (result f64) (i32.eq (local.get $q) (i32.const 1)) (then (call $cos_kernel (local.get $r)))
        (else (if (result f64) (i32.eq (local.get $q) (i32.const 2))
          (then (f64.neg (call $sin_kernel (local.get $r))))
          (else (f64.neg (call $cos_kernel (local.get $r))))))))))
  ;; sin and cos in f64.
  (func $sin64 (export "test_sin64") (param $x f64) (result f64) (call $trig (local.get $x) (i32.const 0)))
  (func $cos64 (export "test_cos64") (param $x f64) (result f64) (call $trig (local.get $x) (i32.const 1)))

  ;; expf's constants, shared by $expf and $expf4 (docs/numerics.md, "Transcendentals")
  (global $EXPF_RANGE f32 (f32.const 104))                   ;; |x| up to this: the table path; past it 0, inf or NaN
  (global $EXPF_SCALE f64 (f64.const 0x1.71547652b82fep+5))   ;; 32/ln2
  (global $EXPF_C4 f64 (f64.const 0x1.3b2ab6fba4e77p-27))     ;; (ln2/32)^i / i!, i = 4..1
  (global $EXPF_C3 f64 (f64.const 0x1.c6b08d704a0c0p-20))
  (global $EXPF_C2 f64 (f64.const 0x1.ebfbdff82c58fp-13))
  (global $EXPF_C1 f64 (f64.const 0x1.62e42fefa39efp-6))

  ;; f32 exp and log, exactly as docs/numerics.md ("Transcendentals") defines them and as host/mathf.cpp
  ;; computes them: every f64 operation below, in this order, so that the two agree bit for bit. No
  ;; step may be fused or reordered (wasm has no implicit FMA).

  ;; Makes expf's table at ADDR_MATHTAB: T[j] = product of R_b over the set bits b of j (from b = 0 up),
  ;; R_4 = sqrt 2, R_b = sqrt R_(b+1), so R_b = 2^(2^b/32). The driver calls it once before anything else.
  (func $init (export "init")
    (local $r0 f64) (local $r1 f64) (local $r2 f64) (local $r3 f64) (local $r4 f64) (local $j i32) (local $t f64)
    (local.set $r4 (f64.sqrt (f64.const 2)))
    (local.set $r3 (f64.sqrt (local.get $r4)))
    (local.set $r2 (f64.sqrt (local.get $r3)))
    (local.set $r1 (f64.sqrt (local.get $r2)))
    (local.set $r0 (f64.sqrt (local.get $r1)))
    (loop $l
      (local.set $t (f64.const 1))
      (if (i32.and (local.get $j) (i32.const 1)) (then (local.set $t (f64.mul (local.get $t) (local.get $r0)))))
      (if (i32.and (local.get $j) (i32.const 2)) (then (local.set $t (f64.mul (local.get $t) (local.get $r1)))))
      (if (i32.and (local.get $j) (i32.const 4)) (then (local.set $t (f64.mul (local.get $t) (local.get $r2)))))
      (if (i32.and (local.get $j) (i32.const 8)) (then (local.set $t (f64.mul (local.get $t) (local.get $r3)))))
      (if (i32.and (local.get $j) (i32.const 16)) (then (local.set $t (f64.mul (local.get $t) (local.get $r4)))))
      (f64.store (i32.add (global.get $MATHTAB) (i32.shl (local.get $j) (i32.const 3))) (local.get $t))
      (br_if $l (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (i32.const 32)))))

  ;; e^x in f32: x 32/ln2 = 32k + j + r (|r| <= 1/2), e^x = 2^k T[j] p(r), p the quartic Taylor
  ;; polynomial of 2^(r/32), all in f64, rounded to f32 once. Within 0.5001 ulp.
  (func $expf (export "test_expf") (param $x f32) (result f32)
    (local $z f64) (local $kd f64) (local $r f64) (local $n i32) (local $p f64)
    (if (i32.eqz (f32.le (f32.abs (local.get $x)) (global.get $EXPF_RANGE)))  ;; NaN, or past the f32 range
      (then
        (if (f32.ne (local.get $x) (local.get $x)) (then (return (local.get $x))))
        (return (select (f32.const inf) (f32.const 0) (f32.gt (local.get $x) (f32.const 0))))))
    (local.set $z (f64.mul (f64.promote_f32 (local.get $x)) (global.get $EXPF_SCALE)))
    (local.set $kd (f64.nearest (local.get $z)))
    (local.set $r (f64.sub (local.get $z) (local.get $kd)))  ;; exact
    (local.set $n (i32.trunc_f64_s (local.get $kd)))
    (local.set $p (global.get $EXPF_C4))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (global.get $EXPF_C3)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (global.get $EXPF_C2)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (global.get $EXPF_C1)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 1)))
    ;; 2^k T[j]: k added to T[j]'s exponent bits (exact, the same number as T[j] x 2^k)
    (f32.demote_f64 (f64.mul (local.get $p) (f64.reinterpret_i64 (call $exp_bits (local.get $n))))))

  ;; ln x in f32: x = 2^e m exactly in f64, m in (sqrt(1/2), sqrt 2], ln m = 2 atanh(s) with
  ;; s = (m-1)/(m+1) by its odd series to s^13, e ln2 + ln m in f64, rounded to f32 once. Within 0.5 ulp.
  (func $logf (export "test_logf") (param $x f32) (result f32)
    (local $bits i64) (local $e i32) (local $m f64) (local $s f64) (local $t f64) (local $p f64)
    (if (i32.eqz (i32.and (f32.gt (local.get $x) (f32.const 0)) (f32.lt (local.get $x) (f32.const inf))))
      (then
        (if (f32.eq (local.get $x) (f32.const 0)) (then (return (f32.const -inf))))
        (if (f32.gt (local.get $x) (f32.const 0)) (then (return (local.get $x))))  ;; +inf
        (return (f32.const nan))))  ;; negative or NaN
    (local.set $bits (i64.reinterpret_f64 (f64.promote_f32 (local.get $x))))  ;; an f32 subnormal is a normal f64
    (local.set $e (i32.sub (i32.wrap_i64 (i64.shr_u (local.get $bits) (i64.const 52))) (i32.const 1023)))
    (local.set $m (f64.reinterpret_i64 (i64.or (i64.and (local.get $bits) (i64.const 0x000fffffffffffff))
                                               (i64.const 0x3ff0000000000000))))
    (if (f64.gt (local.get $m) (f64.const 0x1.6a09e667f3bcdp+0))
      (then (local.set $m (f64.mul (local.get $m) (f64.const 0.5)))
            (local.set $e (i32.add (local.get $e) (i32.const 1)))))
    (local.set $s (f64.div (f64.sub (local.get $m) (f64.const 1)) (f64.add (local.get $m) (f64.const 1))))
    (local.set $t (f64.mul (local.get $s) (local.get $s)))
    (local.set $p (f64.const 0x1.3b13b13b13b14p-3))  ;; 2/(2i+1), i = 6..1, then 2
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $t)) (f64.const 0x1.745d1745d1746p-3)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $t)) (f64.const 0x1.c71c71c71c71cp-3)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $t)) (f64.const 0x1.2492492492492p-2)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $t)) (f64.const 0x1.999999999999ap-2)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $t)) (f64.const 0x1.5555555555555p-1)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $t)) (f64.const 2)))
    (f32.demote_f64 (f64.add (f64.mul (f64.convert_i32_s (local.get $e)) (f64.const 0x1.62e42fefa39efp-1))
                             (f64.mul (local.get $s) (local.get $p)))))

  ;; logistic sigmoid 1 / (1 + e^-x), f32 as the reference computes it
  (func $sigmoid (param $x f32) (result f32)
    (f32.div (f32.const 1) (f32.add (f32.const 1) (call $expf (f32.neg (local.get $x))))))
  ;; e^x of four f32 lanes: in each lane exactly $expf's operations (f64x2 arithmetic is the scalar
  ;; f64 arithmetic lane by lane), so every lane is $expf's result bit for bit. A lane past |x| <= 104
  ;; or NaN sends the four to $expf one at a time.
  (func $expf4 (param $x v128) (result v128)
    (local $lo v128) (local $hi v128) (local $klo v128) (local $khi v128) (local $n v128)
    (if (i32.eqz (i32x4.all_true (f32x4.le (f32x4.abs (local.get $x)) (f32x4.splat (global.get $EXPF_RANGE)))))
      (then (return (call $expf4_lanes (local.get $x)))))
    ;; z = x 32/ln2 and k = nearest(z), lanes 0-1 in lo, 2-3 in hi
    (local.set $lo (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (f64x2.splat (global.get $EXPF_SCALE))))
    (local.set $hi (f64x2.mul (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 8 9 10 11 12 13 14 15
                                                          (local.get $x) (local.get $x)))
                              (f64x2.splat (global.get $EXPF_SCALE))))
    (local.set $klo (f64x2.nearest (local.get $lo)))
    (local.set $khi (f64x2.nearest (local.get $hi)))
    (local.set $n (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (i32x4.trunc_sat_f64x2_s_zero (local.get $klo)) (i32x4.trunc_sat_f64x2_s_zero (local.get $khi))))
    ;; p(r) x 2^k T[j], rounded to f32 once per lane
    (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (f32x4.demote_f64x2_zero (f64x2.mul (call $exp_poly (f64x2.sub (local.get $lo) (local.get $klo)))
                                          (call $exp_scale (local.get $n) (i32.const 0))))
      (f32x4.demote_f64x2_zero (f64x2.mul (call $exp_poly (f64x2.sub (local.get $hi) (local.get $khi)))
                                          (call $exp_scale (local.get $n) (i32.const 1))))))

  ;; The lanes 2 half .. 2 half + 1 of n (i32x4) as $expf's 2^k T[j]: T[n & 31] with n >> 5 added to
  ;; its exponent bits, in an f64x2.
  (func $exp_scale (param $n v128) (param $half i32) (result v128)
    (local $a i32) (local $b i32)
    (if (local.get $half)
      (then (local.set $a (i32x4.extract_lane 2 (local.get $n))) (local.set $b (i32x4.extract_lane 3 (local.get $n))))
      (else (local.set $a (i32x4.extract_lane 0 (local.get $n))) (local.set $b (i32x4.extract_lane 1 (local.get $n)))))
    (i64x2.replace_lane 1
      (i64x2.splat (call $exp_bits (local.get $a)))
      (call $exp_bits (local.get $b))))

  ;; $expf's 2^k T[j] bits for n = 32k + j.
  (func $exp_bits (param $n i32) (result i64)
    (i64.add (i64.load (i32.add (global.get $MATHTAB) (i32.shl (i32.and (local.get $n) (i32.const 31)) (i32.const 3))))
             (i64.shl (i64.extend_i32_s (i32.shr_s (local.get $n) (i32.const 5))) (i64.const 52))))

  ;; $expf's quartic polynomial of 2^(r/32), in two f64 lanes.
  (func $exp_poly (param $r v128) (result v128)
    (local $p v128)
    (local.set $p (f64x2.splat (global.get $EXPF_C4)))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (global.get $EXPF_C3))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (global.get $EXPF_C2))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (global.get $EXPF_C1))))
    (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 1))))

  ;; $expf of each lane, one at a time (the lanes $expf4 does not take).
  (func $expf4_lanes (param $x v128) (result v128)
    (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
      (f32x4.splat (call $expf (f32x4.extract_lane 0 (local.get $x))))
      (call $expf (f32x4.extract_lane 1 (local.get $x))))
      (call $expf (f32x4.extract_lane 2 (local.get $x))))
      (call $expf (f32x4.extract_lane 3 (local.get $x)))))

  ;; $sigmoid of four lanes: 1 / (1 + e^-x), each lane bit for bit.
  (func $sigmoid4 (param $x v128) (result v128)
    (f32x4.div (f32x4.splat (f32.const 1)) (f32x4.add (f32x4.splat (f32.const 1)) (call $expf4 (f32x4.neg (local.get $x))))))

  ;; Test hook: $expf4 on the four f32 at p, in place.
  (func (export "test_expf4") (param $p i32)
    (v128.store (local.get $p) (call $expf4 (v128.load (local.get $p)))))

  ;; 1/sqrt(n) in f64, rounded to f32 (the FWHT normalisation)
  (func $invroot (param $n i32) (result f32)
    (f32.demote_f64 (f64.div (f64.const 1) (f64.sqrt (f64.convert_i32_u (local.get $n))))))

  ;; binary16 bits -> f32 (subnormals normalised, inf/NaN kept)
  (func $f16 (export "test_f16") (param $h i32) (result f32)
    (local $sign i32) (local $e i32) (local $m i32)
    ;; fast path for normal numbers: rebias the exponent (15 -> 127) and widen the mantissa
    (local.set $e (i32.and (local.get $h) (i32.const 0x7c00)))
    (if (i32.and (i32.ne (local.get $e) (i32.const 0)) (i32.ne (local.get $e) (i32.const 0x7c00)))
      (then (return (f32.reinterpret_i32 (i32.or (i32.shl (i32.and (local.get $h) (i32.const 0x8000)) (i32.const 16))
              (i32.add (i32.shl (i32.and (local.get $h) (i32.const 0x7fff)) (i32.const 13)) (i32.const 0x38000000)))))))
    (local.set $sign (i32.shl (i32.and (local.get $h) (i32.const 0x8000)) (i32.const 16)))
    (local.set $e (i32.and (i32.shr_u (local.get $h) (i32.const 10)) (i32.const 31)))
    (local.set $m (i32.and (local.get $h) (i32.const 0x3ff)))
    (if (i32.eqz (local.get $e))
      (then
        (if (i32.eqz (local.get $m)) (then (return (f32.reinterpret_i32 (local.get $sign)))))
        (local.set $e (i32.const 113))
        (loop $n
          (if (i32.eqz (i32.and (local.get $m) (i32.const 0x400)))
            (then (local.set $m (i32.shl (local.get $m) (i32.const 1)))
                  (local.set $e (i32.sub (local.get $e) (i32.const 1)))
                  (br $n))))
        (return (f32.reinterpret_i32 (i32.or (local.get $sign) (i32.or (i32.shl (local.get $e) (i32.const 23))
                 (i32.shl (i32.and (local.get $m) (i32.const 0x3ff)) (i32.const 13))))))))
    (if (i32.eq (local.get $e) (i32.const 31))
      (then (return (f32.reinterpret_i32 (i32.or (local.get $sign)
              (i32.or (i32.const 0x7f800000) (i32.shl (local.get $m) (i32.const 13))))))))
    (f32.reinterpret_i32 (i32.or (local.get $sign) (i32.or
      (i32.shl (i32.add (local.get $e) (i32.const 112)) (i32.const 23)) (i32.shl (local.get $m) (i32.const 13))))))

  ;; ------------------------------------------------------------------------------------------
  ;; Thread pool: one driver and helpers on one memory (docs/engine.md, "Thread pool")
  ;; ------------------------------------------------------------------------------------------

  ;; Blocks while the i32 at addr still holds `expected`. The ONLY wait in the module: Node 20's
  ;; Liftoff loses register-held locals across an inline wait, so callers keep theirs across a call.
  (func $wait32 (param $addr i32) (param $expected i32)
    (drop (memory.atomic.wait32 (local.get $addr) (local.get $expected) (i64.const -1))))

  ;; Runs chunks of job generation g until none is left unclaimed (driver and helpers alike), as
  ;; thread `slot`. A claim
  ;; is a compare-and-swap of NEXT = (generation << 32 | next item), so a thread that is late, and
  ;; still holds an older generation, can never take an item of a newer job; the job's fields it read
  ;; between the load and a successful swap are the job's own (they change only after the job ends).
  (func $work (param $g i32) (param $slot i32)
    (local $v i64) (local $i i32) (local $count i32) (local $end i32) (local $fn i32) (local $t0 f64)
    (loop $claim
      (local.set $v (i64.atomic.load (global.get $NEXT)))
      (if (i32.ne (i32.wrap_i64 (i64.shr_u (local.get $v) (i64.const 32))) (local.get $g)) (then (return)))
      (local.set $i (i32.wrap_i64 (local.get $v)))
      (local.set $fn (i32.load (i32.add (global.get $JOB) (global.get $JOB_FN))))
      (local.set $count (i32.load (i32.add (global.get $JOB) (global.get $JOB_COUNT))))
      (if (i32.ge_u (local.get $i) (local.get $count)) (then (return)))
      (local.set $end (i32.add (local.get $i) (i32.load (i32.add (global.get $JOB) (global.get $JOB_CHUNK)))))
      (if (i32.gt_u (local.get $end) (local.get $count)) (then (local.set $end (local.get $count))))
      (if (i64.ne (i64.atomic.rmw.cmpxchg (global.get $NEXT) (local.get $v)
                    (i64.or (i64.shl (i64.extend_i32_u (local.get $g)) (i64.const 32)) (i64.extend_i32_u (local.get $end))))
                  (local.get $v))
        (then (br $claim)))  ;; someone else claimed first: look again
      (if (i32.load (global.get $P_JOBLOG)) (then (local.set $t0 (call $now))))
      (call_indirect $jobs (type $job_t) (local.get $i) (local.get $end) (local.get $slot) (local.get $fn))
      (if (i32.load (global.get $P_JOBLOG))
        (then (call $log_span (global.get $JOBLOG_CHUNK) (local.get $fn) (local.get $slot)
                              (i32.sub (local.get $end) (local.get $i)) (local.get $t0))))
      ;; the thread that completes the last item wakes the driver
      (if (i32.eq (i32.add (i32.atomic.rmw.add (global.get $DONE) (i32.sub (local.get $end) (local.get $i)))
                           (i32.sub (local.get $end) (local.get $i)))
                  (local.get $count))
        (then (drop (memory.atomic.notify (global.get $DONE) (i32.const 1)))))
      (br $claim)))

  ;; A helper's whole life: take a slot from READY, then spin and wait on GEN; join every job while
  ;; the slot is below THREADS - 1. Between the jobs of one step it spins up to SPIN rounds (the next
  ;; job usually comes sooner than a wake-up would); between steps (IDLE) it sleeps at once. A helper that is late, or never starts, holds nothing up: the job
  ;; ends when its items are done, by whoever claimed them. Returns only when QUIT is set.
  (func $helper (export "helper")
    (local $seen i32) (local $id i32) (local $g i32) (local $spin i32)
    (local.set $id (i32.atomic.rmw.add (global.get $READY) (i32.const 1)))
    (local.set $seen (i32.atomic.load (global.get $GEN)))
    (loop $forever
      (local.set $g (i32.atomic.load (global.get $GEN)))
      (if (i32.eq (local.get $g) (local.get $seen))
        (then
          (if (i32.atomic.load (global.get $QUIT)) (then (return)))
          (local.set $spin (i32.add (local.get $spin) (i32.const 1)))
          (if (i32.or (i32.gt_u (local.get $spin) (i32.load (global.get $SPIN))) (i32.atomic.load (global.get $IDLE)))
            (then (call $wait32 (global.get $GEN) (local.get $seen))))
          (br $forever)))
      (local.set $seen (local.get $g))
      (local.set $spin (i32.const 0))
      (if (i32.atomic.load (global.get $QUIT)) (then (return)))
      (if (i32.lt_u (i32.add (local.get $id) (i32.const 1)) (i32.load (global.get $THREADS)))
        (then (call $work (local.get $g) (i32.add (local.get $id) (i32.const 1)))))
      (br $forever)))

  ;; Driver: runs job `fn` over items [0, count) in chunks of `chunk` with the helpers that are awake
  ;; (up to THREADS - 1) and returns when every item is done. The order of the stores matters: NEXT
  ;; is closed (this generation, no item left) before the job's fields change, opened after.
  (func $run_job (param $fn i32) (param $count i32) (param $chunk i32)
    (local $g i32) (local $v i32) (local $spin i32) (local $t0 f64)
    (if (i32.load (global.get $P_JOBLOG)) (then (local.set $t0 (call $now))))
    (if (i32.eqz (local.get $chunk)) (then (local.set $chunk (i32.const 1))))
    (local.set $g (i32.add (i32.atomic.load (global.get $GEN)) (i32.const 1)))
    (i64.atomic.store (global.get $NEXT) (i64.or (i64.shl (i64.extend_i32_u (local.get $g)) (i64.const 32)) (i64.const 0xffffffff)))
    (i32.store (i32.add (global.get $JOB) (global.get $JOB_FN)) (local.get $fn))
    (i32.store (i32.add (global.get $JOB) (global.get $JOB_COUNT)) (local.get $count))
    (i32.store (i32.add (global.get $JOB) (global.get $JOB_CHUNK)) (local.get $chunk))
    (i32.atomic.store (global.get $DONE) (i32.const 0))
    (i64.atomic.store (global.get $NEXT) (i64.shl (i64.extend_i32_u (local.get $g)) (i64.const 32)))
    (i32.atomic.store (global.get $GEN) (local.get $g))
    (if (i32.gt_u (i32.load (global.get $THREADS)) (i32.const 1))
      (then (drop (memory.atomic.notify (global.get $GEN) (i32.const -1)))))
    (call $work (local.get $g) (i32.const 0))
    (loop $wait
      (local.set $v (i32.atomic.load (global.get $DONE)))
      (if (i32.ne (local.get $v) (local.get $count))
        (then
          (local.set $spin (i32.add (local.get $spin) (i32.const 1)))
          (if (i32.gt_u (local.get $spin) (i32.load (global.get $SPIN)))
            (then (call $wait32 (global.get $DONE) (local.get $v))))
          (br $wait))))
    (if (i32.load (global.get $P_JOBLOG))
      (then (call $log_span (global.get $JOBLOG_JOB) (local.get $fn) (i32.const 0) (local.get $count) (local.get $t0)))))

  ;; Job log: appends a record of kind `kind` that started at t0 and ends now (dropped when the
  ;; log is full; JOBLOG_N keeps counting, so the host sees how many were lost).
  (func $log_span (param $kind i32) (param $fn i32) (param $slot i32) (param $items i32) (param $t0 f64)
    (local $n i32) (local $r i32)
    (local.set $n (i32.atomic.rmw.add (global.get $JOBLOG_N) (i32.const 1)))
    (if (i32.ge_u (local.get $n) (i32.load (global.get $JOBLOG_CAP))) (then (return)))
    (local.set $r (i32.add (i32.load (global.get $P_JOBLOG)) (i32.mul (local.get $n) (global.get $JOBLOG_BYTES))))
    (i32.store8 (i32.add (local.get $r) (global.get $JL_KIND)) (local.get $kind))
    (i32.store8 (i32.add (local.get $r) (global.get $JL_JOB)) (local.get $fn))
    (i32.store16 (i32.add (local.get $r) (global.get $JL_SLOT)) (local.get $slot))
    (i32.store (i32.add (local.get $r) (global.get $JL_ITEMS)) (local.get $items))
    (f64.store (i32.add (local.get $r) (global.get $JL_START)) (local.get $t0))
    (f64.store (i32.add (local.get $r) (global.get $JL_END)) (call $now))
    (i32.store (i32.add (local.get $r) (global.get $JL_POS)) (i32.load (global.get $POS))))

  ;; Turns the job log on for up to `cap` records (the block is kept and reused while it is big
  ;; enough); returns the records' address, or 0 when memory cannot grow. Between steps only.
  (func (export "joblog_start") (param $cap i32) (result i32)
    (if (i32.lt_u (i32.load (global.get $JOBLOG_CAP)) (local.get $cap))
      (then
        (if (i32.eqz (call $buf (global.get $JOBLOG_BUF) (i32.mul (local.get $cap) (global.get $JOBLOG_BYTES))))
          (then (i32.store (global.get $JOBLOG_CAP) (i32.const 0)) (return (i32.const 0))))
        (i32.store (global.get $JOBLOG_CAP) (local.get $cap))))
    (i32.atomic.store (global.get $JOBLOG_N) (i32.const 0))
    (i32.atomic.store (global.get $P_JOBLOG) (i32.load (global.get $JOBLOG_BUF)))
    (i32.load (global.get $JOBLOG_BUF)))

  ;; Turns the job log off; returns the records written since joblog_start (at the address it gave),
  ;; or -1 when some were dropped because the log was full.
  (func (export "joblog_stop") (result i32)
    (i32.atomic.store (global.get $P_JOBLOG) (i32.const 0))
    (if (result i32) (i32.gt_u (i32.atomic.load (global.get $JOBLOG_N)) (i32.load (global.get $JOBLOG_CAP)))
      (then (i32.const -1))
      (else (i32.atomic.load (global.get $JOBLOG_N)))))

  ;; Splits `count` items into chunks so that each thread gets a few (at least `min` items per chunk).
  (func $chunk_for (param $count i32) (param $min i32) (result i32)
    (local $c i32)
    (local.set $c (i32.div_u (local.get $count) (i32.shl (i32.load (global.get $THREADS)) (i32.const 2))))
    (if (i32.lt_u (local.get $c) (local.get $min)) (then (local.set $c (local.get $min))))
    (local.get $c))

  ;; Sets the number of threads (driver included) used by the next jobs; between jobs only.
  (func (export "set_threads") (param $n i32)
    (if (i32.lt_s (local.get $n) (i32.const 1)) (then (local.set $n (i32.const 1))))
    (i32.store (global.get $THREADS) (local.get $n)))

  ;; Spin rounds before a thread sleeps in wait32 (0: always sleep at once).
  (func (export "set_spin") (param $n i32) (i32.store (global.get $SPIN) (local.get $n)))

  ;; Tells every helper to return from `helper` (the page's unload and the tests' teardown).
  (func (export "shutdown")
    (i32.atomic.store (global.get $QUIT) (i32.const 1))
    (drop (i32.atomic.rmw.add (global.get $GEN) (i32.const 1)))
    (drop (memory.atomic.notify (global.get $GEN) (i32.const -1))))

  ;; Test job: for every item i, adds i + 1 to u32 i of the array at FILL_ARRAY and 1 to the total at
  ;; FILL_TOTAL (ARGS).
  (func $test_job_fill (param $b i32) (param $e i32) (param $slot i32)
    (local $p i32)
    (loop $l
      (if (i32.lt_u (local.get $b) (local.get $e))
        (then
          (local.set $p (i32.add (i32.load (i32.add (global.get $ARGS) (global.get $FILL_ARRAY))) (i32.shl (local.get $b) (i32.const 2))))
          (i32.store (local.get $p) (i32.add (i32.load (local.get $p)) (i32.add (local.get $b) (i32.const 1))))
          (drop (i32.atomic.rmw.add (i32.add (global.get $ARGS) (global.get $FILL_TOTAL)) (i32.const 1)))
          (local.set $b (i32.add (local.get $b) (i32.const 1)))
          (br $l)))))

  ;; Runs the test job `rounds` times over `count` items of the u32 array at `arr`; returns the number
  ;; of items processed (count x rounds when no job lost an item).
  (func (export "test_pool") (param $arr i32) (param $count i32) (param $rounds i32) (param $chunk i32) (result i32)
    (local $r i32)
    (i32.store (i32.add (global.get $ARGS) (global.get $FILL_ARRAY)) (local.get $arr))
    (i32.store (i32.add (global.get $ARGS) (global.get $FILL_TOTAL)) (i32.const 0))
    (loop $l
      (if (i32.lt_u (local.get $r) (local.get $rounds))
        (then
          (call $run_job (global.get $JOB_TEST_FILL) (local.get $count) (local.get $chunk))
          (local.set $r (i32.add (local.get $r) (i32.const 1)))
          (br $l))))
    (i32.load (i32.add (global.get $ARGS) (global.get $FILL_TOTAL))))

  ;; ------------------------------------------------------------------------------------------
  ;; Loading in place: the archive lies at ARCH_PTR; load() validates it with the C++ reader's checks
  ;; in the C++ reader's order (host/archive.cpp, docs/archive-format.md) and builds the descriptors.
  ;; ------------------------------------------------------------------------------------------

  ;; Starts over with an empty heap and reserves `len` bytes (+64 slack for the SIMD kernels' tail
  ;; reads) for an archive; returns where the host must write it, or 0 when memory cannot grow.
  (func (export "archive_buffer") (param $len i32) (result i32)
    (local $p i32)
    (call $heap_reset)
    (call $init)
    (call $zero (global.get $P_JOBLOG) (i32.const 128))  ;; the job log (its block was in the old heap)
    (call $zero (global.get $P_ARCH) (i32.sub (global.get $CBQ) (global.get $P_ARCH)))    ;; engine fields .. levels
    (call $zero (global.get $TOK_N) (i32.sub (global.get $EXPECT) (global.get $TOK_N)))   ;; tokenizer, sampler fields
    (local.set $p (call $alloc (i32.add (local.get $len) (i32.const 64))))
    (i32.store (global.get $P_ARCH) (local.get $p))
    (i32.store (global.get $ARCH_LEN) (local.get $len))
    (i32.store (global.get $ARCH_CAP) (local.get $len))
    (local.get $p))

  ;; load() of the first `len` bytes of the archive buffer, everything after it forgotten first
  ;; (the tests' truncation and bit-flip sweeps, without writing the archive again).
  (func (export "load_prefix") (param $len i32) (result i32)
    (if (i32.gt_u (local.get $len) (i32.load (global.get $ARCH_CAP))) (then (return (global.get $ERR_ARG))))
    (i32.store (global.get $ARCH_LEN) (local.get $len))
    (i32.store (global.get $HEAP_TOP) (i32.add (i32.add (i32.load (global.get $P_ARCH)) (i32.load (global.get $ARCH_CAP))) (i32.const 64)))
    (call $load))

  ;; Archive readers (offsets relative to the archive; callers checked the range)
  (func $au8 (param $o i64) (result i32)
    (i32.load8_u (i32.add (i32.load (global.get $P_ARCH)) (i32.wrap_i64 (local.get $o)))))
  ;; u16, u32, u64 at an archive offset.
  (func $au16 (param $o i64) (result i32)
    (i32.load16_u (i32.add (i32.load (global.get $P_ARCH)) (i32.wrap_i64 (local.get $o)))))
  (func $au32 (param $o i64) (result i32)
    (i32.load (i32.add (i32.load (global.get $P_ARCH)) (i32.wrap_i64 (local.get $o)))))
  (func $au64 (param $o i64) (result i64)
    (i64.load (i32.add (i32.load (global.get $P_ARCH)) (i32.wrap_i64 (local.get $o)))))
  ;; 1 if [off, off + len) lies inside the archive
  (func $inside (param $off i64) (param $len i64) (result i32)
    (local $size i64)
    (local.set $size (i64.extend_i32_u (i32.load (global.get $ARCH_LEN))))
    (i32.and (i64.le_u (local.get $off) (local.get $size))
             (i64.le_u (local.get $len) (i64.sub (local.get $size) (local.get $off)))))
  ;; The u32 at a fixed address (a geometry field).
  (func $g (param $addr i32) (result i32) (i32.load (local.get $addr)))
  (func $fail (param $code i32) (param $record i32) (param $detail i32) (result i32)
    (i32.store (global.get $ERR_RECORD) (local.get $record))
    (i32.store (global.get $ERR_DETAIL) (local.get $detail))
    (local.get $code))
  ;; 1 if v is a power of two.
  (func $pow2 (param $v i32) (result i32)
    (i32.and (i32.ne (local.get $v) (i32.const 0))
             (i32.eqz (i32.and (local.get $v) (i32.sub (local.get $v) (i32.const 1))))))
  ;; 0 if lo <= the u32 header field at `field` (a G_* address) <= hi, else its header offset + 1
  (func $range (param $field i32) (param $lo i32) (param $hi i32) (result i32)
    (local $v i32)
    (local.set $v (i32.load (local.get $field)))
    (if (result i32) (i32.and (i32.ge_u (local.get $v) (local.get $lo)) (i32.le_u (local.get $v) (local.get $hi)))
      (then (i32.const 0)) (else (call $field_detail (local.get $field)))))
  ;; The error detail of a header field: its header offset + 1 (0 means no field).
  (func $field_detail (param $field i32) (result i32)
    (i32.add (call $field_offset (local.get $field)) (i32.const 1)))
  ;; The header offset of a header field (a G_* address).
  (func $field_offset (param $field i32) (result i32)
    (i32.sub (local.get $field) (global.get $GEO)))

  ;; validateGeometry (host/geometry.cpp) rule by rule: 0, or the offending header offset + 1.
  (func $geo_rules (result i32)
    (local $r i32) (local $d i32) (local $h i32) (local $i i32) (local $v i32) (local $prev i32)
    (if (i32.ne (call $g (global.get $G_CBLEN)) (global.get $CODEBOOK_LEN)) (then (return (call $field_detail (global.get $G_CBLEN)))))
    (if (i32.ne (call $g (global.get $G_KVBITS)) (i32.const 8)) (then (return (call $field_detail (global.get $G_KVBITS)))))
    (if (local.tee $r (call $range (global.get $G_VOCAB) (i32.const 1) (i32.const 1048576))) (then (return (local.get $r))))
    (if (local.tee $r (call $range (global.get $G_D) (i32.const 1) (i32.const 65536))) (then (return (local.get $r))))
    (local.set $d (call $g (global.get $G_D)))
    (if (local.tee $r (call $range (global.get $G_H) (i32.const 1) (local.get $d))) (then (return (local.get $r))))
    (local.set $h (call $g (global.get $G_H)))
    (if (local.tee $r (call $range (global.get $G_KV) (i32.const 1) (local.get $h))) (then (return (local.get $r))))
    (if (local.tee $r (call $range (global.get $G_L) (i32.const 1) (i32.const 1024))) (then (return (local.get $r))))
    (if (local.tee $r (call $range (global.get $G_MAXSEQ) (i32.const 1) (i32.const 1048576))) (then (return (local.get $r))))
    (if (i32.rem_u (local.get $h) (call $g (global.get $G_KV))) (then (return (call $field_detail (global.get $G_KV)))))
    (if (i64.ne (i64.mul (i64.extend_i32_u (call $g (global.get $G_HD))) (i64.extend_i32_u (local.get $h)))
                (i64.extend_i32_u (local.get $d))) (then (return (call $field_detail (global.get $G_HD)))))
    (if (i32.or (i32.lt_u (call $g (global.get $G_HD)) (i32.const 2)) (i32.and (call $g (global.get $G_HD)) (i32.const 1)))
      (then (return (call $field_detail (global.get $G_HD)))))
    (if (i32.and (call $g (global.get $G_HD)) (i32.const 31)) (then (return (call $field_detail (global.get $G_HD)))))  ;; int8 KV blocks of 32
    (local.set $v (call $g (global.get $G_HADA)))
    (if (i32.or (i32.eqz (call $pow2 (local.get $v)))
          (i32.or (i32.lt_u (local.get $v) (local.get $d)) (i32.gt_u (local.get $v) (i32.const 131072))))
      (then (return (call $field_detail (global.get $G_HADA)))))
    (if (local.tee $r (call $range (global.get $G_LANES) (i32.const 1) (i32.const 16))) (then (return (local.get $r))))
    (if (i32.gt_u (call $g (global.get $G_KVWIN)) (call $g (global.get $G_MAXSEQ))) (then (return (call $field_detail (global.get $G_KVWIN)))))
    ;; rope_theta finite and > 0 (a NaN fails the comparison)
    (if (i32.eqz (i32.and (f32.gt (f32.load (global.get $G_THETA)) (f32.const 0))
                          (f32.lt (f32.load (global.get $G_THETA)) (f32.const inf))))
      (then (return (call $field_detail (global.get $G_THETA)))))
    (if (local.tee $r (call $range (global.get $G_NORD) (i32.const 1) (i32.const 4))) (then (return (local.get $r))))
    (local.set $i (i32.const 0))
    (loop $orders
      (local.set $v (i32.load (i32.add (global.get $G_ORD) (i32.shl (local.get $i) (i32.const 2)))))
      (if (i32.lt_u (local.get $i) (call $g (global.get $G_NORD)))
        (then (if (i32.or (i32.eqz (local.get $v)) (i32.gt_u (local.get $v) (i32.const 16)))
                (then (return (i32.add (call $field_detail (global.get $G_ORD)) (i32.shl (local.get $i) (i32.const 2)))))))
        (else (if (local.get $v) (then (return (i32.add (call $field_detail (global.get $G_ORD)) (i32.shl (local.get $i) (i32.const 2))))))))
      (br_if $orders (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 4))))
    (if (local.tee $r (call $range (global.get $G_SLOTS) (i32.const 1) (i32.const 16777216))) (then (return (local.get $r))))
    (if (local.tee $r (call $range (global.get $G_SUB) (i32.const 1) (i32.const 65536))) (then (return (local.get $r))))
    (if (local.tee $r (call $range (global.get $G_TAPS) (i32.const 1) (i32.const 64))) (then (return (local.get $r))))
    (if (local.tee $r (call $range (global.get $G_DIL) (i32.const 1) (i32.const 64))) (then (return (local.get $r))))
    (if (local.tee $r (call $range (global.get $G_NSITE) (i32.const 0) (i32.const 4))) (then (return (local.get $r))))
    (local.set $i (i32.const 0))
    (loop $sites
      (local.set $v (i32.load (i32.add (global.get $G_SITE) (i32.shl (local.get $i) (i32.const 2)))))
      (if (i32.ge_u (local.get $i) (call $g (global.get $G_NSITE)))
        (then (if (local.get $v) (then (return (i32.add (call $field_detail (global.get $G_SITE)) (i32.shl (local.get $i) (i32.const 2)))))))
        (else
          (if (i32.ge_u (local.get $v) (call $g (global.get $G_L)))
            (then (return (i32.add (call $field_detail (global.get $G_SITE)) (i32.shl (local.get $i) (i32.const 2))))))
          (if (i32.and (i32.gt_u (local.get $i) (i32.const 0)) (i32.le_u (local.get $v) (local.get $prev)))
            (then (return (i32.add (call $field_detail (global.get $G_SITE)) (i32.shl (local.get $i) (i32.const 2))))))))
      (local.set $prev (local.get $v))
      (br_if $sites (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 4))))
    (local.set $v (call $g (global.get $G_TABLES)))
    (if (call $g (global.get $G_NSITE))
      (then (if (i32.or (i32.or (i32.eqz (local.get $v)) (i32.rem_u (local.get $v) (call $g (global.get $G_NORD))))
                        (i32.gt_u (local.get $v) (i32.const 64)))
              (then (return (call $field_detail (global.get $G_TABLES))))))
      (else (if (i32.gt_u (local.get $v) (i32.const 64)) (then (return (call $field_detail (global.get $G_TABLES)))))))
    (i32.const 0))

  ;; Records in an archive without heads or tokenizer: 1 + LAYER_RECORDS L + MHC_RECORDS + ENGRAM_RECORDS S + 1.
  (func $core_count (result i32)
    (i32.add (i32.add (i32.add (i32.const 2) (global.get $MHC_RECORDS)) (i32.mul (global.get $LAYER_RECORDS) (call $g (global.get $G_L))))
             (i32.mul (call $g (global.get $G_NSITE)) (global.get $ENGRAM_RECORDS))))

  ;; Directory offset of record i: the directory follows the header and the codebooks.
  (func $rec_at (param $i i32) (result i64)
    (i64.add (i64.extend_i32_u (i32.add (global.get $HEADER_BYTES) (i32.shl (global.get $CODEBOOK_LEN) (i32.const 2))))
             (i64.mul (i64.extend_i32_u (global.get $DIR_SIZE)) (i64.extend_i32_u (local.get $i)))))

  ;; Fields of the directory entry at archive offset `at` (DIR_*; callers checked that the directory is inside).
  (func $dir_dtype (param $at i64) (result i32) (call $au8 (call $dir_field (local.get $at) (global.get $DIR_DTYPE))))
  (func $dir_ndim (param $at i64) (result i32) (call $au8 (call $dir_field (local.get $at) (global.get $DIR_NDIM))))
  (func $dir_zero (param $at i64) (result i32) (call $au16 (call $dir_field (local.get $at) (global.get $DIR_ZERO))))
  (func $dir_offset (param $at i64) (result i64) (call $au64 (call $dir_field (local.get $at) (global.get $DIR_OFFSET))))
  (func $dir_length (param $at i64) (result i64) (call $au64 (call $dir_field (local.get $at) (global.get $DIR_LENGTH))))
  (func $dir_group (param $at i64) (result i32) (call $au32 (call $dir_field (local.get $at) (global.get $DIR_GROUP))))
  (func $dir_bits (param $at i64) (result i32) (call $au32 (call $dir_field (local.get $at) (global.get $DIR_BITS))))
  ;; (shape entry k, 0 .. DIR_DIMS - 1)
  (func $dir_shape (param $at i64) (param $k i32) (result i32)
    (call $au32 (call $dir_field (local.get $at) (i32.add (global.get $DIR_SHAPE) (i32.shl (local.get $k) (i32.const 2))))))
  ;; Archive offset of the field at `field` of the directory entry at `at`.
  (func $dir_field (param $at i64) (param $field i32) (result i64)
    (i64.add (local.get $at) (i64.extend_i32_u (local.get $field))))

  ;; Bits per stored index of a CQ record with `bits` bits: bits, or 2 for ternary (crumbs).
  (func $index_bits (param $bits i32) (result i32)
    (select (i32.const 2) (local.get $bits) (i32.eq (local.get $bits) (global.get $BITS_TERNARY))))

  ;; Level kind (KIND_*) of a CQ record with `bits` bits (2, 3, 4 or BITS_TERNARY).
  (func $kind_of (param $bits i32) (result i32)
    (if (result i32) (i32.eq (local.get $bits) (global.get $BITS_TERNARY))
      (then (global.get $KIND_TERNARY))
      (else (i32.add (global.get $KIND_2BIT) (i32.sub (local.get $bits) (i32.const 2))))))

  ;; The expected dtype, ndim and shape of a record, written to EXPECT.
  (func $set_expect (param $dtype i32) (param $ndim i32) (param $s0 i64) (param $s1 i64) (param $s2 i64)
    (i32.store (i32.add (global.get $EXPECT) (global.get $EX_DTYPE)) (local.get $dtype))
    (i32.store (i32.add (global.get $EXPECT) (global.get $EX_NDIM)) (local.get $ndim))
    (i64.store (call $expect_dim (i32.const 0)) (local.get $s0))
    (i64.store (call $expect_dim (i32.const 1)) (local.get $s1))
    (i64.store (call $expect_dim (i32.const 2)) (local.get $s2)))

  ;; Address of the expected shape's dimension k (u64).
  (func $expect_dim (param $k i32) (result i32)
    (i32.add (i32.add (global.get $EXPECT) (global.get $EX_SHAPE)) (i32.shl (local.get $k) (i32.const 3))))

  ;; Code (HEAD_CONTRASTIVE, HEAD_CONFIDENCE; 0: neither) of probe head h, read from the manifest record's blob.
  (func $head_code (param $h i32) (result i32)
    (local $r i64) (local $v f32)
    (local.set $r (call $rec_at (i32.load (global.get $CORE))))
    (if (i32.eq (call $dir_dtype (local.get $r)) (global.get $DT_FP32))
      (then (local.set $v (f32.reinterpret_i32 (call $au32 (i64.add (call $dir_offset (local.get $r))
                                                               (i64.extend_i32_u (i32.shl (local.get $h) (i32.const 2))))))))
      (else (local.set $v (call $f16 (call $au16 (i64.add (call $dir_offset (local.get $r))
                                                      (i64.extend_i32_u (i32.shl (local.get $h) (i32.const 1)))))))))
    (if (result i32) (f32.eq (local.get $v) (f32.convert_i32_u (global.get $HEAD_CONTRASTIVE))) (then (global.get $HEAD_CONTRASTIVE))
      (else (if (result i32) (f32.eq (local.get $v) (f32.convert_i32_u (global.get $HEAD_CONFIDENCE))) (then (global.get $HEAD_CONFIDENCE))
        (else (i32.const 0))))))

  ;; Canonical layout (host/layout.cpp): sets EXPECT for record i.
  (func $expect (param $i i32)
    (local $j i32) (local $k i32) (local $L i64) (local $d i64) (local $lanes i64) (local $hd i64)
    (local $hada i64) (local $code i32)
    (local.set $L (i64.extend_i32_u (call $g (global.get $G_L))))
    (local.set $d (i64.extend_i32_u (call $g (global.get $G_D))))
    (local.set $lanes (i64.extend_i32_u (call $g (global.get $G_LANES))))
    (local.set $hd (i64.extend_i32_u (call $g (global.get $G_HD))))
    (local.set $hada (i64.extend_i32_u (call $g (global.get $G_HADA))))
    (if (i32.eqz (local.get $i))
      (then (return (call $set_expect (global.get $DT_CQ) (i32.const 2)
                      (i64.extend_i32_u (call $g (global.get $G_VOCAB))) (local.get $d) (i64.const 0)))))
    (local.set $j (i32.sub (local.get $i) (i32.const 1)))
    (if (i32.lt_u (local.get $j) (i32.mul (global.get $LAYER_RECORDS) (i32.wrap_i64 (local.get $L))))
      (then (return (call $expect_layer (i32.rem_u (local.get $j) (global.get $LAYER_RECORDS))))))
    (local.set $j (i32.sub (local.get $j) (i32.mul (global.get $LAYER_RECORDS) (i32.wrap_i64 (local.get $L)))))
    (if (i32.lt_u (local.get $j) (global.get $MHC_RECORDS))
      (then (return (call $expect_mhc (local.get $j)))))
    (local.set $j (i32.sub (local.get $j) (global.get $MHC_RECORDS)))
    (if (i32.lt_u (local.get $j) (i32.mul (call $g (global.get $G_NSITE)) (global.get $ENGRAM_RECORDS)))
      (then (return (call $expect_engram (i32.rem_u (local.get $j) (global.get $ENGRAM_RECORDS))))))
    (local.set $j (i32.sub (local.get $j) (i32.mul (call $g (global.get $G_NSITE)) (global.get $ENGRAM_RECORDS))))
    (if (i32.eqz (local.get $j))
      (then (return (call $set_expect (global.get $DT_FP16) (i32.const 1) (local.get $d) (i64.const 0) (i64.const 0)))))
    (local.set $j (i32.sub (local.get $j) (i32.const 1)))
    (if (i32.load (global.get $NHEADS))
      (then
        (if (i32.eqz (local.get $j))
          (then (return (call $set_expect (global.get $DT_FP16) (i32.const 1)
                          (i64.extend_i32_u (i32.load (global.get $NHEADS))) (i64.const 0) (i64.const 0)))))
        (local.set $j (i32.sub (local.get $j) (i32.const 1)))
        (if (i32.lt_u (local.get $j) (i32.mul (global.get $HEAD_RECORDS) (i32.load (global.get $NHEADS))))
          (then
            (local.set $code (call $head_code (i32.div_u (local.get $j) (global.get $HEAD_RECORDS))))
            (local.set $k (i32.rem_u (local.get $j) (global.get $HEAD_RECORDS)))
            (return (call $expect_head (local.get $k)
              (i64.extend_i32_u (select (global.get $CONTRASTIVE_PROBES) (global.get $CONFIDENCE_PROBES)
                                        (i32.eq (local.get $code) (global.get $HEAD_CONTRASTIVE))))
              (i64.extend_i32_u (select (global.get $CONTRASTIVE_OUTPUTS) (global.get $CONFIDENCE_OUTPUTS)
                                        (i32.eq (local.get $code) (global.get $HEAD_CONTRASTIVE))))))))))
    (call $set_expect (global.get $DT_RAW) (i32.const 0) (i64.const 0) (i64.const 0) (i64.const 0)))

  ;; Record k (0..13) of a layer.
  (func $expect_layer (param $k i32)
    (local $d i64) (local $q i64) (local $kv i64) (local $hd i64)
    (local.set $d (i64.extend_i32_u (call $g (global.get $G_D))))
    (local.set $hd (i64.extend_i32_u (call $g (global.get $G_HD))))
    (local.set $q (i64.mul (local.get $hd) (i64.extend_i32_u (call $g (global.get $G_H)))))
    (local.set $kv (i64.mul (local.get $hd) (i64.extend_i32_u (call $g (global.get $G_KV)))))
    (block $b13 (block $b11 (block $b10 (block $b9 (block $b8 (block $b7 (block $b6 (block $b4 (block $b2 (block $b1 (block $b0
      (br_table $b0 $b1 $b2 $b2 $b4 $b4 $b6 $b7 $b8 $b9 $b10 $b11 $b11 $b11 (local.get $k)))
      (return (call $set_expect (global.get $DT_FP16) (i32.const 1) (local.get $d) (i64.const 0) (i64.const 0))))   ;; norm_in
      (return (call $set_expect (global.get $DT_CQ) (i32.const 2) (local.get $q) (local.get $d) (i64.const 0))))    ;; q_proj
      (return (call $set_expect (global.get $DT_CQ) (i32.const 2) (local.get $kv) (local.get $d) (i64.const 0))))   ;; k, v
      (return (call $set_expect (global.get $DT_FP16) (i32.const 1) (local.get $hd) (i64.const 0) (i64.const 0))))  ;; q_norm, k_norm
      (return (call $set_expect (global.get $DT_CQ) (i32.const 2) (local.get $q) (local.get $d) (i64.const 0))))    ;; gate_proj
      (return (call $set_expect (global.get $DT_CQ) (i32.const 2) (local.get $d) (local.get $q) (i64.const 0))))    ;; out_proj
      (return (call $set_expect (global.get $DT_FP16) (i32.const 1) (local.get $d) (i64.const 0) (i64.const 0))))   ;; post_norm
      (return (call $set_expect (global.get $DT_FP16) (i32.const 1) (i64.const 1) (i64.const 0) (i64.const 0))))    ;; attn_gate
      (return (call $set_expect (global.get $DT_FP16) (i32.const 1) (local.get $d) (i64.const 0) (i64.const 0))))   ;; pre_hada
      (call $set_expect (global.get $DT_FP16) (i32.const 1) (i64.extend_i32_u (call $g (global.get $G_HADA))) (i64.const 0) (i64.const 0))))

  ;; Record k (0..8) of the stacked mHC block.
  (func $expect_mhc (param $k i32)
    (local $L i64) (local $lanes i64) (local $d i64)
    (local.set $L (i64.extend_i32_u (call $g (global.get $G_L))))
    (local.set $lanes (i64.extend_i32_u (call $g (global.get $G_LANES))))
    (local.set $d (i64.extend_i32_u (call $g (global.get $G_D))))
    (if (i32.lt_u (local.get $k) (global.get $M_B_PRE))     ;; a_pre, a_post, a_res
      (then (return (call $set_expect (global.get $DT_FP16) (i32.const 1) (local.get $L) (i64.const 0) (i64.const 0)))))
    (if (i32.lt_u (local.get $k) (global.get $M_B_RES))     ;; b_pre, b_post
      (then (return (call $set_expect (global.get $DT_FP16) (i32.const 2) (local.get $L) (local.get $lanes) (i64.const 0)))))
    (if (i32.eq (local.get $k) (global.get $M_B_RES))
      (then (return (call $set_expect (global.get $DT_FP16) (i32.const 3) (local.get $L) (local.get $lanes) (local.get $lanes)))))
    (if (i32.lt_u (local.get $k) (global.get $M_PHI_RES))   ;; phi_pre, phi_post
      (then (return (call $set_expect (global.get $DT_CQ) (i32.const 2) (i64.mul (local.get $L) (local.get $lanes))
                       (i64.mul (local.get $lanes) (local.get $d)) (i64.const 0)))))
    (call $set_expect (global.get $DT_CQ) (i32.const 2) (i64.mul (i64.mul (local.get $L) (local.get $lanes)) (local.get $lanes))
      (i64.mul (local.get $lanes) (local.get $d)) (i64.const 0)))

  ;; Record k (0..3) of an engram site.
  (func $expect_engram (param $k i32)
    (local $t i64) (local $d i64)
    (local.set $t (i64.extend_i32_u (call $g (global.get $G_TABLES))))
    (local.set $d (i64.extend_i32_u (call $g (global.get $G_D))))
    (if (i32.eq (local.get $k) (global.get $E_TABLES))
      (then (return (call $set_expect (global.get $DT_CQ) (i32.const 2)
        (i64.mul (local.get $t) (i64.extend_i32_u (call $g (global.get $G_SLOTS))))
        (i64.extend_i32_u (call $g (global.get $G_SUB))) (i64.const 0)))))
    (if (i32.lt_u (local.get $k) (global.get $E_TAPS))   ;; key_proj, value_proj
      (then (return (call $set_expect (global.get $DT_CQ) (i32.const 2) (local.get $d)
        (i64.mul (local.get $t) (i64.extend_i32_u (call $g (global.get $G_SUB)))) (i64.const 0)))))
    (call $set_expect (global.get $DT_FP16) (i32.const 2) (i64.extend_i32_u (call $g (global.get $G_TAPS))) (local.get $d) (i64.const 0)))

  ;; Record k (HR_*) of a probe head with P probes and `out` outputs.
  (func $expect_head (param $k i32) (param $p i64) (param $out i64)
    (local $d i64)
    (local.set $d (i64.extend_i32_u (call $g (global.get $G_D))))
    (if (i32.eq (local.get $k) (global.get $HR_PROBES))
      (then (return (call $set_expect (global.get $DT_FP16) (i32.const 2) (local.get $p) (local.get $d) (i64.const 0)))))
    (if (i32.eq (local.get $k) (global.get $HR_PROJ))
      (then (return (call $set_expect (global.get $DT_FP16) (i32.const 2) (local.get $out)
                       (i64.mul (local.get $p) (local.get $d)) (i64.const 0)))))
    (call $set_expect (global.get $DT_FP16) (i32.const 1) (local.get $out) (i64.const 0) (i64.const 0)))

  ;; checkRecord (host/archive.cpp) for record i against EXPECT: 0 or an ERR_* code.
  (func $check_record (param $i i32) (param $dirEnd i64) (result i32)
    (local $at i64) (local $dtype i32) (local $ndim i32) (local $k i32) (local $edt i32)
    (local $group i32) (local $bits i32) (local $expected i64) (local $len i64) (local $off i64)
    (local.set $at (call $rec_at (local.get $i)))
    (local.set $dtype (call $dir_dtype (local.get $at)))
    (local.set $ndim (call $dir_ndim (local.get $at)))
    (if (i32.or (i32.lt_u (local.get $dtype) (global.get $DT_FP16)) (i32.gt_u (local.get $dtype) (global.get $DT_RAW)))
      (then (return (global.get $ERR_DTYPE))))
    (if (call $dir_zero (local.get $at)) (then (return (global.get $ERR_FIELDS))))
    (if (i32.gt_u (local.get $ndim) (global.get $DIR_DIMS)) (then (return (global.get $ERR_FIELDS))))
    (local.set $k (local.get $ndim))
    (loop $unused
      (if (i32.lt_u (local.get $k) (global.get $DIR_DIMS))
        (then
          (if (call $dir_shape (local.get $at) (local.get $k))
            (then (return (global.get $ERR_FIELDS))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br $unused))))
    (local.set $edt (i32.load (i32.add (global.get $EXPECT) (global.get $EX_DTYPE))))
    (if (i32.eqz (i32.or (i32.eq (local.get $dtype) (local.get $edt))
                         (i32.and (i32.eq (local.get $edt) (global.get $DT_FP16)) (i32.eq (local.get $dtype) (global.get $DT_FP32)))))
      (then (return (global.get $ERR_DTYPE))))
    (if (i32.ne (local.get $ndim) (i32.load (i32.add (global.get $EXPECT) (global.get $EX_NDIM)))) (then (return (global.get $ERR_SHAPE))))
    (local.set $k (i32.const 0))
    (loop $shape
      (if (i32.lt_u (local.get $k) (local.get $ndim))
        (then
          (if (i64.ne (i64.extend_i32_u (call $dir_shape (local.get $at) (local.get $k))) (i64.load (call $expect_dim (local.get $k))))
            (then (return (global.get $ERR_SHAPE))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br $shape))))
    (local.set $group (call $dir_group (local.get $at)))
    (local.set $bits (call $dir_bits (local.get $at)))
    (local.set $len (call $dir_length (local.get $at)))
    (local.set $off (call $dir_offset (local.get $at)))
    (if (i32.eq (local.get $dtype) (global.get $DT_CQ))
      (then
        (if (i32.or (i32.eqz (call $pow2 (local.get $group)))
                    (i32.or (i32.lt_u (local.get $group) (i32.const 32)) (i32.gt_u (local.get $group) (i32.const 65536))))
          (then (return (global.get $ERR_GROUP))))
        (if (i32.or (i32.lt_u (local.get $bits) (i32.const 2)) (i32.gt_u (local.get $bits) (global.get $BITS_TERNARY)))
          (then (return (global.get $ERR_BITS))))
        (local.set $expected (call $cq_bytes (call $dir_shape (local.get $at) (i32.const 0)) (call $dir_shape (local.get $at) (i32.const 1))
                                             (local.get $group) (local.get $bits))))
      (else
        (if (i32.or (local.get $group) (local.get $bits)) (then (return (global.get $ERR_GROUP))))
        (local.set $expected (if (result i64) (i32.eq (local.get $dtype) (global.get $DT_RAW))
          (then (local.get $len))            ;; RAW: any length (the tokenizer parser judges it)
          (else (call $dense_bytes (local.get $at) (local.get $ndim) (local.get $dtype)))))))
    (if (i64.ne (local.get $len) (local.get $expected)) (then (return (global.get $ERR_LENGTH))))
    (if (i64.lt_u (local.get $off) (local.get $dirEnd)) (then (return (global.get $ERR_OFFSET))))
    (if (i32.eqz (call $inside (local.get $off) (local.get $len))) (then (return (global.get $ERR_BOUNDS))))
    (i32.const 0))

  ;; Bytes of a dense FP16 or FP32 record at `at`: the product of its ndim shape entries x 2 or 4.
  (func $dense_bytes (param $at i64) (param $ndim i32) (param $dtype i32) (result i64)
    (local $n i64) (local $k i32)
    (local.set $n (i64.const 1))
    (loop $el
      (if (i32.lt_u (local.get $k) (local.get $ndim))
        (then
          (local.set $n (i64.mul (local.get $n)
            (i64.extend_i32_u (call $dir_shape (local.get $at) (local.get $k)))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br $el))))
    (i64.mul (local.get $n) (select (i64.const 2) (i64.const 4) (i32.eq (local.get $dtype) (global.get $DT_FP16)))))

  ;; cqBlobBytes: packed rows (whole bytes) + fp16 norms of a rows x cols CQ matrix.
  (func $cq_bytes (param $rows i32) (param $cols i32) (param $group i32) (param $bits i32) (result i64)
    (local $groups i64) (local $ib i64)
    (local.set $groups (i64.div_u (i64.add (i64.extend_i32_u (local.get $cols)) (i64.extend_i32_u (i32.sub (local.get $group) (i32.const 1))))
                                  (i64.extend_i32_u (local.get $group))))
    (local.set $ib (i64.extend_i32_u (call $index_bits (local.get $bits))))
    (i64.add
      (i64.shr_u (i64.add (i64.mul (i64.mul (i64.extend_i32_u (local.get $rows)) (i64.mul (local.get $groups) (i64.extend_i32_u (local.get $group))))
                                   (local.get $ib)) (i64.const 7)) (i64.const 3))
      (i64.mul (i64.mul (i64.extend_i32_u (local.get $rows)) (local.get $groups)) (i64.const 2))))

  ;; The header, the geometry, the codebooks and the directory count: 0 or an ERR_* code.
  (func $load_header (result i32)
    (local $tag i32) (local $r i32) (local $k i32) (local $v f32) (local $cbBytes i32)
    (if (i32.eqz (call $inside (i64.const 0) (i64.const 4))) (then (return (global.get $ERR_TRUNCATED))))  ;; the tag's u32
    (local.set $tag (call $au32 (i64.const 0)))
    (if (i32.eq (local.get $tag) (global.get $TAG_NEEDLE1)) (then (return (global.get $ERR_NEEDLE1))))
    (if (i32.eq (local.get $tag) (global.get $TAG_NEEDLE3)) (then (return (global.get $ERR_NEEDLE3))))
    (if (i32.ne (local.get $tag) (global.get $TAG)) (then (return (global.get $ERR_TAG))))
    (if (i32.eqz (call $inside (i64.const 0) (i64.extend_i32_u (global.get $HEADER_BYTES)))) (then (return (global.get $ERR_TRUNCATED))))
    (memory.copy (global.get $GEO) (i32.load (global.get $P_ARCH)) (global.get $HEADER_BYTES))
    (if (local.tee $r (call $geo_rules))
      (then (return (call $fail (global.get $ERR_GEOMETRY) (i32.const -1) (i32.sub (local.get $r) (i32.const 1))))))
    (local.set $cbBytes (i32.shl (global.get $CODEBOOK_LEN) (i32.const 2)))  ;; the codebooks follow the header
    (if (i32.eqz (call $inside (i64.extend_i32_u (global.get $HEADER_BYTES)) (i64.extend_i32_u (local.get $cbBytes))))
      (then (return (global.get $ERR_TRUNCATED))))
    (memory.copy (global.get $CODEBOOK) (i32.add (i32.load (global.get $P_ARCH)) (global.get $HEADER_BYTES)) (local.get $cbBytes))
    (loop $cb
      (local.set $v (f32.load (i32.add (global.get $CODEBOOK) (i32.shl (local.get $k) (i32.const 2)))))
      (if (f32.ne (f32.sub (local.get $v) (local.get $v)) (f32.const 0))   ;; inf or NaN
        (then (return (call $fail (global.get $ERR_CODEBOOK) (i32.const -1)
                        (i32.add (global.get $HEADER_BYTES) (i32.shl (local.get $k) (i32.const 2)))))))
      (br_if $cb (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (global.get $CODEBOOK_LEN))))
    (i32.const 0))

  ;; load(): validates the archive written at ARCH_PTR and prepares the engine; 0 or an ERR_* code
  ;; (ADDR_ERR_RECORD: the failing record, -1 for the header; ADDR_ERR_DETAIL: header offset or piece).
  (func $load (export "load") (result i32)
    (local $r i32) (local $n i32) (local $core i32) (local $dirEnd i64) (local $extra i32) (local $i i32)
    (local $withTok i32)
    (i32.store (global.get $LOADED) (i32.const 0))
    (i32.store (global.get $STATE_OK) (i32.const 0))
    (i32.store (global.get $NHEADS) (i32.const 0))    ;; (a previous archive's heads must not linger,
    (i32.store (global.get $TOK_N) (i32.const 0))     ;;  nor its tokenizer)
    (i32.store (global.get $HEADS_ON) (i32.const 0))
    (i32.store (global.get $POOLED) (i32.const 0))
    (i32.store (global.get $P_SNAP) (i32.const 0))    ;; (the heap under a snapshot is gone)
    (i32.store (global.get $SNAP_CAP) (i32.const 0))
    (i32.store (global.get $BATCH_OK) (i32.const 0))  ;; (and under the batch blocks)
    (i32.store (global.get $BROW_SLOTS) (i32.const 0))
    (i32.store (global.get $ERR_RECORD) (i32.const -1))
    (i32.store (global.get $ERR_DETAIL) (i32.const -1))
    (if (local.tee $r (call $load_header)) (then (return (local.get $r))))
    (local.set $n (i32.load (global.get $G_NT)))
    (local.set $core (call $core_count))
    (i32.store (global.get $CORE) (local.get $core))
    (i32.store (global.get $NREC) (local.get $n))
    (if (i32.lt_u (local.get $n) (local.get $core))
      (then (return (call $fail (global.get $ERR_COUNT) (i32.const -1) (call $field_offset (global.get $G_NT))))))
    (local.set $dirEnd (call $rec_at (local.get $n)))
    (if (i32.eqz (call $inside (call $rec_at (i32.const 0)) (i64.sub (local.get $dirEnd) (call $rec_at (i32.const 0)))))
      (then (return (global.get $ERR_TRUNCATED))))  ;; the whole directory, records [0, n)
    (local.set $withTok (i32.eq (call $dir_dtype (call $rec_at (i32.sub (local.get $n) (i32.const 1)))) (global.get $DT_RAW)))
    (i32.store (global.get $HAS_TOK) (local.get $withTok))
    (local.set $extra (i32.sub (local.get $n) (local.get $core)))
    (if (i32.and (local.get $withTok) (i32.eqz (local.get $extra)))
      (then (return (call $fail (global.get $ERR_DTYPE) (i32.sub (local.get $n) (i32.const 1)) (i32.const -1)))))
    (local.set $extra (i32.sub (local.get $extra) (local.get $withTok)))
    (if (local.get $extra)
      (then
        (if (i32.or (i32.le_u (local.get $extra) (global.get $HEAD_RECORDS))  ;; the manifest, then HEAD_RECORDS per head
                    (i32.rem_u (i32.sub (local.get $extra) (i32.const 1)) (global.get $HEAD_RECORDS)))
          (then (return (call $fail (global.get $ERR_COUNT) (i32.const -1) (call $field_offset (global.get $G_NT))))))
        (i32.store (global.get $NHEADS) (i32.div_u (i32.sub (local.get $extra) (i32.const 1)) (global.get $HEAD_RECORDS)))
        (call $set_expect (global.get $DT_FP16) (i32.const 1)
          (i64.extend_i32_u (i32.load (global.get $NHEADS))) (i64.const 0) (i64.const 0))
        (if (local.tee $r (call $check_record (local.get $core) (local.get $dirEnd)))
          (then (return (call $fail (local.get $r) (local.get $core) (i32.const -1)))))
        (loop $codes
          (if (i32.lt_u (local.get $i) (i32.load (global.get $NHEADS)))
            (then
              (if (i32.eqz (call $head_code (local.get $i)))
                (then (return (call $fail (global.get $ERR_MANIFEST) (local.get $core) (local.get $i)))))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br $codes))))))
    (local.set $i (i32.const 0))
    (loop $records
      (if (i32.lt_u (local.get $i) (local.get $n))
        (then
          (call $expect (local.get $i))
          (if (local.tee $r (call $check_record (local.get $i) (local.get $dirEnd)))
            (then (return (call $fail (local.get $r) (local.get $i) (i32.const -1)))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $records))))
    (if (local.tee $r (call $build_descriptors)) (then (return (local.get $r))))
    (if (local.get $withTok)
      (then
        (if (local.tee $r (call $tok_load (i32.sub (local.get $n) (i32.const 1))))
          (then (return (call $fail (local.get $r) (i32.sub (local.get $n) (i32.const 1)) (i32.load (global.get $ERR_DETAIL))))))))
    (call $build_tables)
    (if (local.tee $r (call $alloc_state)) (then (return (local.get $r))))
    (i32.store (global.get $LOADED) (i32.const 1))
    (i32.const 0))

  ;; Descriptor address of record i.
  (func $rec (param $i i32) (result i32)
    (i32.add (i32.load (global.get $P_RECS)) (i32.mul (local.get $i) (global.get $D_SIZE))))

  ;; Field getters of a record descriptor (D_*) and of a probe-head descriptor (H_*).
  (func $d_dtype (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_DTYPE))))
  (func $d_bits (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_BITS))))
  (func $d_rows (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_ROWS))))
  (func $d_cols (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_COLS))))
  (func $d_pad (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_PAD))))
  (func $d_group (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_GROUP))))
  (func $d_data (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_DATA))))
  (func $d_norms (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_NORMS))))
  (func $d_row_bytes (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_ROW_BYTES))))
  (func $d_kind (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_KIND))))
  (func $d_groups (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_GROUPS))))
  (func $d_elements (param $d i32) (result i32) (i32.load (i32.add (local.get $d) (global.get $D_ELEMENTS))))
  (func $h_code (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_CODE))))
  (func $h_probes (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_PROBES))))
  (func $h_outputs (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_OUTPUTS))))
  (func $h_probes_t (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_PROBES_T))))
  (func $h_run_max (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_RUN_MAX))))
  (func $h_run_sum (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_RUN_SUM))))
  (func $h_run_acc (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_RUN_ACC))))
  (func $h_record (param $h i32) (result i32) (i32.load (i32.add (local.get $h) (global.get $H_RECORD))))
  ;; (the descriptor of its record k: HR_*)
  (func $h_rec (param $h i32) (param $k i32) (result i32) (call $rec (i32.add (call $h_record (local.get $h)) (local.get $k))))

  ;; Fills the descriptor of every record (CQ: views into the archive; FP16/FP32: widened to f32).
  (func $build_descriptors (result i32)
    (local $i i32) (local $n i32) (local $d i32) (local $at i64) (local $dtype i32) (local $src i32)
    (local $cnt i32) (local $p i32) (local $k i32) (local $bits i32) (local $ib i32)
    (local.set $n (i32.load (global.get $NREC)))
    (i32.store (global.get $P_RECS) (call $alloc (i32.mul (local.get $n) (global.get $D_SIZE))))
    (if (i32.eqz (i32.load (global.get $P_RECS))) (then (return (global.get $ERR_MEMORY))))
    (loop $each
      (if (i32.lt_u (local.get $i) (local.get $n))
        (then
          (local.set $d (call $rec (local.get $i)))
          (local.set $at (call $rec_at (local.get $i)))
          (local.set $dtype (call $dir_dtype (local.get $at)))
          (local.set $src (i32.add (i32.load (global.get $P_ARCH)) (i32.wrap_i64 (call $dir_offset (local.get $at)))))
          (i32.store (i32.add (local.get $d) (global.get $D_DTYPE)) (local.get $dtype))
          (i32.store (i32.add (local.get $d) (global.get $D_ROWS)) (call $dir_shape (local.get $at) (i32.const 0)))
          (i32.store (i32.add (local.get $d) (global.get $D_COLS)) (call $dir_shape (local.get $at) (i32.const 1)))
          (i32.store (i32.add (local.get $d) (global.get $D_DATA)) (local.get $src))
          (i32.store (i32.add (local.get $d) (global.get $D_ELEMENTS)) (i32.wrap_i64 (call $dir_length (local.get $at))))
          (if (i32.eq (local.get $dtype) (global.get $DT_CQ))
            (then
              (local.set $bits (call $dir_bits (local.get $at)))
              (local.set $ib (call $index_bits (local.get $bits)))
              (i32.store (i32.add (local.get $d) (global.get $D_BITS)) (local.get $bits))
              (i32.store (i32.add (local.get $d) (global.get $D_GROUP)) (local.tee $k (call $dir_group (local.get $at))))
              (i32.store (i32.add (local.get $d) (global.get $D_PAD)) (i32.mul (i32.div_u (i32.add (call $d_cols (local.get $d)) (i32.sub (local.get $k) (i32.const 1))) (local.get $k)) (local.get $k)))
              (i32.store (i32.add (local.get $d) (global.get $D_GROUPS)) (i32.div_u (call $d_pad (local.get $d)) (local.get $k)))
              (i32.store (i32.add (local.get $d) (global.get $D_ROW_BYTES)) (i32.shr_u (i32.mul (call $d_pad (local.get $d)) (local.get $ib)) (i32.const 3)))
              (i32.store (i32.add (local.get $d) (global.get $D_NORMS)) (i32.add (local.get $src) (i32.mul (call $d_rows (local.get $d)) (call $d_row_bytes (local.get $d)))))
              (i32.store (i32.add (local.get $d) (global.get $D_KIND)) (call $kind_of (local.get $bits)))))
          (if (i32.or (i32.eq (local.get $dtype) (global.get $DT_FP16)) (i32.eq (local.get $dtype) (global.get $DT_FP32)))
            (then  ;; D_ELEMENTS holds the blob's bytes so far: 2 per FP16 element, 4 per FP32 one
              (local.set $cnt (i32.shr_u (call $d_elements (local.get $d))
                                         (select (i32.const 1) (i32.const 2) (i32.eq (local.get $dtype) (global.get $DT_FP16)))))
              (local.set $p (call $alloc (i32.add (i32.shl (local.get $cnt) (i32.const 2)) (i32.const 16))))
              (if (i32.eqz (local.get $p)) (then (return (global.get $ERR_MEMORY))))
              (i32.store (i32.add (local.get $d) (global.get $D_DATA)) (local.get $p))
              (i32.store (i32.add (local.get $d) (global.get $D_ELEMENTS)) (local.get $cnt))
              (local.set $k (i32.const 0))
              (loop $w
                (if (i32.lt_u (local.get $k) (local.get $cnt))
                  (then
                    (f32.store (i32.add (local.get $p) (i32.shl (local.get $k) (i32.const 2)))
                      (if (result f32) (i32.eq (local.get $dtype) (global.get $DT_FP16))
                        (then (call $f16 (i32.load16_u (i32.add (local.get $src) (i32.shl (local.get $k) (i32.const 1))))))
                        (else (f32.load (i32.add (local.get $src) (i32.shl (local.get $k) (i32.const 2)))))))
                    (local.set $k (i32.add (local.get $k) (i32.const 1)))
                    (br $w))))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $each))))
    (i32.const 0))

  ;; Record index helpers: layer field k (0..13), mHC field k (0..8), engram site s field k (0..3).
  (func $r_layer (param $l i32) (param $k i32) (result i32)
    (call $rec (i32.add (i32.add (i32.const 1) (i32.mul (local.get $l) (global.get $LAYER_RECORDS))) (local.get $k))))
  ;; (mHC field k)
  (func $r_mhc (param $k i32) (result i32)
    (call $rec (i32.add (i32.add (i32.const 1) (i32.mul (call $g (global.get $G_L)) (global.get $LAYER_RECORDS))) (local.get $k))))
  ;; (engram site s, field k)
  (func $r_engram (param $s i32) (param $k i32) (result i32)
    (call $rec (i32.add (i32.add (i32.add (i32.const 1) (global.get $MHC_RECORDS)) (i32.mul (call $g (global.get $G_L)) (global.get $LAYER_RECORDS)))
                        (i32.add (i32.mul (local.get $s) (global.get $ENGRAM_RECORDS)) (local.get $k)))))
  ;; (the final norm)
  (func $r_final (result i32)
    (call $rec (i32.sub (call $core_count) (i32.const 1))))
  ;; f32 data of a control tensor's descriptor
  (func $fdata (param $d i32) (result i32) (call $d_data (local.get $d)))

  ;; ------------------------------------------------------------------------------------------
  ;; Derived tables and session state
  ;; ------------------------------------------------------------------------------------------

  ;; Ternary level c / sqrt(group) in f32, as the C++ reader computes it (kTernaryC / sqrtf(group)).
  (func $ternary_level (param $group i32) (result f32)
    (f32.div (f32.const 1.2240064) (f32.sqrt (f32.convert_i32_u (local.get $group)))))

  ;; quantizeBlockInt8 of the 16 f32 at src into int8 at dst; returns the scale (docs/numerics.md).
  (func $quant16 (param $src i32) (param $dst i32) (result f32)
    (local $k i32) (local $amax f32) (local $inv f32) (local $v f32)
    (loop $m
      (local.set $v (f32.abs (f32.load (i32.add (local.get $src) (i32.shl (local.get $k) (i32.const 2))))))
      (if (f32.lt (local.get $amax) (local.get $v)) (then (local.set $amax (local.get $v))))
      (br_if $m (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.const 16))))
    (if (f32.eq (local.get $amax) (f32.const 0))
      (then (v128.store (local.get $dst) (v128.const i32x4 0 0 0 0)) (return (f32.const 0))))
    (local.set $inv (f32.div (f32.const 127) (local.get $amax)))
    (local.set $k (i32.const 0))
    (loop $q
      (i32.store8 (i32.add (local.get $dst) (local.get $k))
        (call $q8 (f32.mul (f32.load (i32.add (local.get $src) (i32.shl (local.get $k) (i32.const 2)))) (local.get $inv))))
      (br_if $q (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.const 16))))
    (f32.div (local.get $amax) (f32.const 127)))

  ;; roundEven(x) clamped to [-127, 127], NaN -> 0 (the int8 rule of quantizeBlockInt8)
  (func $q8 (param $x f32) (result i32)
    (local.set $x (f32.nearest (local.get $x)))
    (if (f32.ge (local.get $x) (f32.const 127)) (then (return (i32.const 127))))
    (if (f32.le (local.get $x) (f32.const -127)) (then (return (i32.const -127))))
    (i32.trunc_sat_f32_s (local.get $x)))

  ;; Levels by raw index for the four kinds, their int8 forms and scales, and the three column
  ;; permutations of a 32-column block that match how each kernel expands packed indices.
  (func $build_tables
    (local $k i32) (local $p i32)
    (call $zero (global.get $LEVELS) (i32.mul (global.get $KINDS) (global.get $LEVELS_STRIDE)))
    (memory.copy (call $level_at (global.get $KIND_2BIT) (i32.const 0)) (i32.add (global.get $CODEBOOK) (global.get $CB2)) (i32.const 16))  ;; 4 f32
    (memory.copy (call $level_at (global.get $KIND_3BIT) (i32.const 0)) (i32.add (global.get $CODEBOOK) (global.get $CB3)) (i32.const 32))  ;; 8
    (memory.copy (call $level_at (global.get $KIND_4BIT) (i32.const 0)) (i32.add (global.get $CODEBOOK) (global.get $CB4)) (i32.const 64))  ;; 16
    ;; ternary: {0, +1, 0, -1} by raw index, the int8 levels {0, 127, 0, -127}; c/sqrt(group) is applied
    ;; by $level and $cb_scale
    (f32.store (call $level_at (global.get $KIND_TERNARY) (global.get $TERNARY_PLUS)) (f32.const 1))
    (f32.store (call $level_at (global.get $KIND_TERNARY) (global.get $TERNARY_MINUS)) (f32.const -1))
    (loop $kinds
      (f32.store (call $kind_cbs (local.get $k))
        (call $quant16 (call $level_at (local.get $k) (i32.const 0)) (call $kind_cbq (local.get $k))))
      (br_if $kinds (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (global.get $KINDS))))
    (local.set $p (i32.const 0))
    (loop $perm
      ;; crumbs: position 8t + j holds column 4j + t
      (i32.store8 (i32.add (call $perm_at (global.get $LAYOUT_CRUMBS)) (local.get $p))
        (i32.add (i32.shl (i32.and (local.get $p) (i32.const 7)) (i32.const 2)) (i32.shr_u (local.get $p) (i32.const 3))))
      ;; 3-bit words: position 4t + m holds column 8m + t
      (i32.store8 (i32.add (call $perm_at (global.get $LAYOUT_WORDS3)) (local.get $p))
        (i32.add (i32.shl (i32.and (local.get $p) (i32.const 3)) (i32.const 3)) (i32.shr_u (local.get $p) (i32.const 2))))
      ;; nibbles: position j < 16 holds column 2j (low nibbles), 16 + j holds 2j + 1
      (i32.store8 (i32.add (call $perm_at (global.get $LAYOUT_NIBBLES)) (local.get $p))
        (i32.add (i32.shl (i32.and (local.get $p) (i32.const 15)) (i32.const 1)) (i32.shr_u (local.get $p) (i32.const 4))))
      (br_if $perm (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 1))) (global.get $PERM_STRIDE)))))

  ;; Address of the f32 level of raw index idx of kind `kind` in LEVELS.
  (func $level_at (param $kind i32) (param $idx i32) (result i32)
    (i32.add (i32.add (global.get $LEVELS) (i32.mul (local.get $kind) (global.get $LEVELS_STRIDE)))
             (i32.shl (local.get $idx) (i32.const 2))))
  ;; Address of the int8 level table of kind `kind` (one v128), and of its f32 scale.
  (func $kind_cbq (param $kind i32) (result i32)
    (i32.add (global.get $CBQ) (i32.mul (local.get $kind) (global.get $CBQ_STRIDE))))
  (func $kind_cbs (param $kind i32) (result i32)
    (i32.add (global.get $CBS) (i32.mul (local.get $kind) (global.get $CBS_STRIDE))))
  ;; Address of the column permutation of layout `layout` (LAYOUT_*).
  (func $perm_at (param $layout i32) (result i32)
    (i32.add (global.get $PERM) (i32.mul (local.get $layout) (global.get $PERM_STRIDE))))

  ;; int8-level scale of a CQ matrix: the kind's, times c/sqrt(group) for ternary.
  (func $cb_scale (param $d i32) (result f32)
    (local $kind i32)
    (local.set $kind (call $d_kind (local.get $d)))
    (if (result f32) (i32.eq (local.get $kind) (global.get $KIND_TERNARY))
      (then (f32.div (call $ternary_level (call $d_group (local.get $d))) (f32.const 127)))
      (else (f32.load (call $kind_cbs (local.get $kind))))))

  ;; f32 level of raw index idx of a CQ matrix (dequantisation).
  (func $level (param $d i32) (param $idx i32) (result f32)
    (local $kind i32) (local $v f32)
    (local.set $kind (call $d_kind (local.get $d)))
    (local.set $v (f32.load (call $level_at (local.get $kind) (local.get $idx))))
    (if (result f32) (i32.eq (local.get $kind) (global.get $KIND_TERNARY))
      (then (f32.mul (local.get $v) (call $ternary_level (call $d_group (local.get $d)))))
      (else (local.get $v))))

  ;; Allocates n bytes (+64 for SIMD tails) and stores the pointer at `field`; 0 on failure.
  (func $buf (param $field i32) (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (call $alloc (i32.add (local.get $n) (i32.const 64))))
    (i32.store (local.get $field) (local.get $p))
    (local.get $p))

  ;; Sets MAXPAD to the widest padded input of any CQ record; returns the largest group.
  (func $widest (result i32)
    (local $i i32) (local $v i32) (local $maxg i32)
    (i32.store (global.get $MAXPAD) (i32.const 0))
    (loop $each
      (if (i32.lt_u (local.get $i) (i32.load (global.get $NREC)))
        (then
          (if (i32.eq (call $d_dtype (call $rec (local.get $i))) (global.get $DT_CQ))
            (then
              (if (i32.gt_u (local.tee $v (call $d_pad (call $rec (local.get $i)))) (i32.load (global.get $MAXPAD)))
                (then (i32.store (global.get $MAXPAD) (local.get $v))))
              (if (i32.gt_u (local.tee $v (call $d_group (call $rec (local.get $i)))) (local.get $maxg))
                (then (local.set $maxg (local.get $v))))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $each))))
    (local.get $maxg))

  ;; The per-model buffers (everything but the KV cache and scores, which depend on the sink).
  (func $alloc_state (result i32)
    (local $d i32) (local $ld i32) (local $qd i32) (local $kvd i32) (local $i i32)
    (local $maxg i32) (local $ok i32) (local $S i32) (local $E i32) (local $hd i32)
    (local.set $d (i32.shl (call $g (global.get $G_D)) (i32.const 2)))
    (local.set $ld (i32.mul (local.get $d) (call $g (global.get $G_LANES))))
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $qd (i32.shl (i32.mul (call $g (global.get $G_H)) (local.get $hd)) (i32.const 2)))
    (local.set $kvd (i32.shl (i32.mul (call $g (global.get $G_KV)) (local.get $hd)) (i32.const 2)))
    (local.set $S (call $g (global.get $G_NSITE)))
    (local.set $E (i32.shl (i32.mul (call $g (global.get $G_TABLES)) (call $g (global.get $G_SUB))) (i32.const 2)))
    (local.set $maxg (call $widest))
    (local.set $ok (i32.const 1))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_X) (local.get $ld)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_NX) (local.get $ld)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_NEWX) (local.get $ld)) (i32.const 0))))
    (local.set $i (global.get $P_U))
    (loop $dvec  ;; U, B, H (1100..1108)
      (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (local.get $i) (local.get $d)) (i32.const 0))))
      (br_if $dvec (i32.le_u (local.tee $i (i32.add (local.get $i) (i32.const 4))) (global.get $P_H))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_Q) (local.get $qd)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_K) (local.get $kvd)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_V) (local.get $kvd)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_GATE) (local.get $qd)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_O) (local.get $qd)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_A) (local.get $d)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_X1) (local.get $d)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_Z) (i32.shl (call $g (global.get $G_HADA)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_Y) (local.get $d)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_XM) (local.get $d)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_HPRE) (i32.const 64)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_HPOST) (i32.const 64)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_ROUTE) (i32.const 1024)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_RFREQ) (i32.shl (local.get $hd) (i32.const 1))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_RCOS) (i32.shl (local.get $hd) (i32.const 1))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_RSIN) (i32.shl (local.get $hd) (i32.const 1))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_HIST) (i32.shl (call $g (global.get $G_MAXSEQ)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_PREPF) (i32.shl (i32.load (global.get $MAXPAD)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_PREPQ) (i32.add (i32.shl (i32.load (global.get $MAXPAD)) (i32.const 1)) (i32.const 128))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_PREPS) (i32.shr_u (i32.load (global.get $MAXPAD)) (i32.const 3))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_DQ) (i32.shl (local.get $maxg) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_EE) (i32.mul (local.get $S) (local.get $E))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_EK) (i32.mul (local.get $S) (local.get $d))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_EV) (i32.mul (local.get $S) (local.get $d))) (i32.const 0))))
    (i32.store (global.get $RING_ROWS) (i32.add (i32.const 1)
      (i32.mul (i32.sub (call $g (global.get $G_TAPS)) (i32.const 1)) (call $g (global.get $G_DIL)))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_ERING)
      (i32.mul (i32.mul (local.get $S) (i32.load (global.get $RING_ROWS))) (local.get $d))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_ESLOT) (i32.shl (call $g (global.get $G_TABLES)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_EVALID) (i32.shl (call $g (global.get $G_TABLES)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_LOGITS) (i32.shl (call $g (global.get $G_VOCAB)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_SORT) (i32.shl (call $g (global.get $G_VOCAB)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_PROB) (i32.shl (call $g (global.get $G_VOCAB)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_F16) (i32.const 262144)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_MASK)
      (i32.shl (i32.shr_u (i32.add (call $g (global.get $G_VOCAB)) (i32.const 31)) (i32.const 5)) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.eqz (call $alloc_heads))))
    (if (i32.eqz (local.get $ok)) (then (return (global.get $ERR_MEMORY))))
    (call $f16_table)
    (f32.store (global.get $SQRTD) (f32.sqrt (f32.convert_i32_u (call $g (global.get $G_D)))))
    (call $rope_freqs)
    (i32.store (global.get $KV_CAP) (i32.const 0))
    (i32.store (global.get $STATE_OK) (i32.const 1))
    (i32.const 0))

  ;; The table at P_F16: entry h = $f16(h), so that the four-block kernels widen a group norm with
  ;; one load instead of a dozen operations and a branch (256 KB; the norms of one matrix touch a few
  ;; cache lines of it). Stored as bits, so NaN payloads stay exactly what $f16 makes.
  (func $f16_table
    (local $h i32) (local $t i32)
    (local.set $t (i32.load (global.get $P_F16)))
    (loop $each
      (i32.store (i32.add (local.get $t) (i32.shl (local.get $h) (i32.const 2))) (i32.reinterpret_f32 (call $f16 (local.get $h))))
      (br_if $each (i32.lt_u (local.tee $h (i32.add (local.get $h) (i32.const 1))) (i32.const 65536)))))

  ;; freq_m = f32(1 / theta^(2m / head_dim)) in f64 (docs/numerics.md).
  (func $rope_freqs
    (local $m i32) (local $half i32) (local $lt f64)
    (local.set $half (i32.shr_u (call $g (global.get $G_HD)) (i32.const 1)))
    (local.set $lt (call $log64 (f64.promote_f32 (f32.load (global.get $G_THETA)))))
    (loop $l
      (if (i32.lt_u (local.get $m) (local.get $half))
        (then
          (f32.store (i32.add (i32.load (global.get $P_RFREQ)) (i32.shl (local.get $m) (i32.const 2)))
            (f32.demote_f64 (f64.div (f64.const 1) (call $exp64 (f64.mul (local.get $lt)
              (f64.div (f64.mul (f64.const 2) (f64.convert_i32_u (local.get $m))) (f64.convert_i32_u (call $g (global.get $G_HD)))))))))
          (local.set $m (i32.add (local.get $m) (i32.const 1)))
          (br $l)))))

  ;; Starts a new session with `sink` pinned KV positions: sizes the KV cache (allocating more if the
  ;; sink grew) and clears the state. 0 or ERR_NOT_LOADED / ERR_MEMORY.
  (func $session_reset_i (export "session_reset") (param $sink i32) (result i32)
    (local $slots i32) (local $win i32) (local $rows i32) (local $kvb i32)
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (global.get $ERR_NOT_LOADED))))
    (local.set $win (call $g (global.get $G_KVWIN)))
    (local.set $slots (call $g (global.get $G_MAXSEQ)))
    (if (local.get $win)
      (then (if (i64.lt_u (i64.add (i64.extend_i32_u (local.get $sink)) (i64.extend_i32_u (local.get $win))) (i64.extend_i32_u (local.get $slots)))
        (then (local.set $slots (i32.add (local.get $sink) (local.get $win)))))))
    (local.set $rows (i32.mul (i32.mul (call $g (global.get $G_L)) (call $g (global.get $G_KV))) (local.get $slots)))
    (local.set $kvb (i32.mul (local.get $rows) (call $g (global.get $G_HD))))
    (if (i32.gt_u (local.get $slots) (i32.load (global.get $KV_CAP)))
      (then
        (if (i32.eqz (i32.and (i32.and (i32.ne (call $buf (global.get $P_KQ) (local.get $kvb)) (i32.const 0))
                                       (i32.ne (call $buf (global.get $P_VQ) (local.get $kvb)) (i32.const 0)))
                     (i32.and (i32.ne (call $buf (global.get $P_KS) (i32.shr_u (local.get $kvb) (i32.const 3))) (i32.const 0))
                              (i32.and (i32.ne (call $buf (global.get $P_VS) (i32.shr_u (local.get $kvb) (i32.const 3))) (i32.const 0))
                                       (i32.ne (call $buf (global.get $P_SCORES) (i32.shl (i32.mul (i32.add (local.get $slots) (i32.const 8)) (i32.shl (call $g (global.get $G_H)) (i32.const 1))) (i32.const 2))) (i32.const 0))))))
          (then (return (global.get $ERR_MEMORY))))
        (i32.store (global.get $KV_CAP) (local.get $slots))))
    (i32.store (global.get $SINK) (local.get $sink))
    (i32.store (global.get $KV_SLOTS) (local.get $slots))
    (i32.store (global.get $POS) (i32.const 0))
    (i32.store (global.get $HEADS_ON) (i32.const 0))   ;; a new session pools nothing until heads_begin
    (i32.store (global.get $POOLED) (i32.const 0))
    (call $zero (i32.load (global.get $P_KQ)) (local.get $kvb))
    (call $zero (i32.load (global.get $P_VQ)) (local.get $kvb))
    (call $zero (i32.load (global.get $P_KS)) (i32.shr_u (local.get $kvb) (i32.const 3)))
    (call $zero (i32.load (global.get $P_VS)) (i32.shr_u (local.get $kvb) (i32.const 3)))
    (call $zero (i32.load (global.get $P_HIST)) (i32.shl (call $g (global.get $G_MAXSEQ)) (i32.const 2)))
    (call $zero (i32.load (global.get $P_ERING)) (i32.shl (i32.mul (i32.mul (call $g (global.get $G_NSITE)) (i32.load (global.get $RING_ROWS))) (call $g (global.get $G_D))) (i32.const 2)))
    (i32.const 0))

  ;; ------------------------------------------------------------------------------------------
  ;; Kernels: FWHT, activation preparation (A8), CQ matrix-vector products, row dequantisation
  ;; ------------------------------------------------------------------------------------------

  ;; Unnormalised in-place Walsh-Hadamard butterfly over n f32 at p (n a power of two), stride 1
  ;; first, a+b left and a-b right; strides 1 and 2 inside one vector, then whole vectors.
  (func $fwht (export "test_fwht") (param $p i32) (param $n i32)
    (local $i i32) (local $v v128) (local $a v128) (local $b v128) (local $s i32) (local $base i32)
    (local $j i32) (local $x v128) (local $y v128) (local $e i32)
    (if (i32.lt_u (local.get $n) (i32.const 4)) (then (return (call $fwht_small (local.get $p) (local.get $n)))))
    (local.set $e (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $i (local.get $p))
    (loop $v4
      (local.set $v (v128.load (local.get $i)))
      ;; stride 1: (v0+v1, v0-v1, v2+v3, v2-v3)
      (local.set $a (i8x16.shuffle 0 1 2 3 0 1 2 3 8 9 10 11 8 9 10 11 (local.get $v) (local.get $v)))
      (local.set $b (i8x16.shuffle 4 5 6 7 4 5 6 7 12 13 14 15 12 13 14 15 (local.get $v) (local.get $v)))
      (local.set $v (f32x4.add (local.get $a) (f32x4.mul (local.get $b) (v128.const f32x4 1 -1 1 -1))))
      ;; stride 2: (v0+v2, v1+v3, v0-v2, v1-v3)
      (local.set $a (i8x16.shuffle 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 (local.get $v) (local.get $v)))
      (local.set $b (i8x16.shuffle 8 9 10 11 12 13 14 15 8 9 10 11 12 13 14 15 (local.get $v) (local.get $v)))
      (v128.store (local.get $i) (f32x4.add (local.get $a) (f32x4.mul (local.get $b) (v128.const f32x4 1 1 -1 -1))))
      (br_if $v4 (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $e))))
    (local.set $s (i32.const 16))  ;; stride 4 in bytes
    (loop $stage
      (if (i32.lt_u (local.get $s) (i32.shl (local.get $n) (i32.const 2)))
        (then
          (local.set $base (local.get $p))
          (loop $blocks
            (local.set $j (local.get $base))
            (loop $pairs
              (local.set $x (v128.load (local.get $j)))
              (local.set $y (v128.load (i32.add (local.get $j) (local.get $s))))
              (v128.store (local.get $j) (f32x4.add (local.get $x) (local.get $y)))
              (v128.store (i32.add (local.get $j) (local.get $s)) (f32x4.sub (local.get $x) (local.get $y)))
              (br_if $pairs (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 16))) (i32.add (local.get $base) (local.get $s)))))
            (br_if $blocks (i32.lt_u (local.tee $base (i32.add (local.get $base) (i32.shl (local.get $s) (i32.const 1)))) (local.get $e))))
          (local.set $s (i32.shl (local.get $s) (i32.const 1)))
          (br $stage)))))

  ;; The butterfly for n = 1 or 2.
  (func $fwht_small (param $p i32) (param $n i32)
    (local $a f32) (local $b f32)
    (if (i32.eq (local.get $n) (i32.const 2))
      (then
        (local.set $a (f32.load (local.get $p)))
        (local.set $b (f32.load offset=4 (local.get $p)))
        (f32.store (local.get $p) (f32.add (local.get $a) (local.get $b)))
        (f32.store offset=4 (local.get $p) (f32.sub (local.get $a) (local.get $b))))))

  ;; fwht followed by x f32(1/sqrt(n)): the orthonormal H_n.
  (func $fwht_norm (export "test_fwht_norm") (param $p i32) (param $n i32)
    (call $fwht (local.get $p) (local.get $n))
    (call $scale (local.get $p) (local.get $n) (call $invroot (local.get $n))))

  ;; x[0..n) *= s (n any; vectors then a scalar tail).
  (func $scale (param $p i32) (param $n i32) (param $s f32)
    (local $e i32) (local $e4 i32) (local $sv v128)
    (local.set $sv (f32x4.splat (local.get $s)))
    (local.set $e (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $e4 (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $d (loop $v
      (br_if $d (i32.ge_u (local.get $p) (local.get $e4)))
      (v128.store (local.get $p) (f32x4.mul (v128.load (local.get $p)) (local.get $sv)))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (br $v)))
    (block $d2 (loop $t
      (br_if $d2 (i32.ge_u (local.get $p) (local.get $e)))
      (f32.store (local.get $p) (f32.mul (f32.load (local.get $p)) (local.get $s)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (br $t))))

  ;; Column layout (LAYOUT_*) of a matrix kind: crumbs for 2-bit and ternary, 3-bit words, nibbles for 4-bit.
  (func $layout (param $kind i32) (result i32)
    (if (result i32) (i32.eq (local.get $kind) (global.get $KIND_3BIT))
      (then (global.get $LAYOUT_WORDS3))
      (else (select (global.get $LAYOUT_NIBBLES) (global.get $LAYOUT_CRUMBS)
                    (i32.eq (local.get $kind) (global.get $KIND_4BIT))))))

  ;; A8 preparation of x (m.cols f32) for CQ matrix m into PREPQ / PREPS (below); remembers what it
  ;; prepared, so that the next products of the same layout reuse it.
  (func $prepare (param $m i32) (param $x i32)
    (call $prepare_to (local.get $m) (local.get $x) (i32.load (global.get $P_PREPQ)) (i32.load (global.get $P_PREPS)) (i32.const 4))
    (i32.store (global.get $P_PREP_SRC) (local.get $x))
    (i32.store (global.get $PREP_LAYOUT) (call $layout (call $d_kind (local.get $m))))
    (i32.store (global.get $PREP_COLS) (call $d_cols (local.get $m)))
    (i32.store (global.get $PREP_GROUP) (call $d_group (local.get $m))))

  ;; A8 preparation of x for CQ matrix m: zero-pad, FWHT + 1/sqrt(G) per group, then per block of 32
  ;; quantise to int8 (docs/numerics.md) and store widened to i16 in the kernel's column order at q
  ;; (64 bytes per block), block b's scale at s + b sstride. Driver only (P_PREPF is its scratch).
  (func $prepare_to (param $m i32) (param $x i32) (param $q i32) (param $s i32) (param $sstride i32)
    (local $cols i32) (local $pad i32) (local $g i32) (local $f i32) (local $b i32) (local $nb i32)
    (local.set $cols (call $d_cols (local.get $m)))
    (local.set $pad (call $d_pad (local.get $m)))
    (local.set $g (call $d_group (local.get $m)))
    (local.set $f (i32.load (global.get $P_PREPF)))
    (memory.copy (local.get $f) (local.get $x) (i32.shl (local.get $cols) (i32.const 2)))
    (call $zero (i32.add (local.get $f) (i32.shl (local.get $cols) (i32.const 2)))
                (i32.shl (i32.sub (local.get $pad) (local.get $cols)) (i32.const 2)))
    (local.set $b (i32.const 0))
    (loop $groups
      (call $fwht_norm (i32.add (local.get $f) (i32.shl (local.get $b) (i32.const 2))) (local.get $g))
      (br_if $groups (i32.lt_u (local.tee $b (i32.add (local.get $b) (local.get $g))) (local.get $pad))))
    (local.set $nb (i32.shr_u (local.get $pad) (i32.const 5)))
    (local.set $b (i32.const 0))
    (loop $blocks
      (call $quant_block (i32.add (local.get $f) (i32.shl (local.get $b) (i32.const 7)))
        (i32.add (local.get $q) (i32.shl (local.get $b) (i32.const 6)))
        (i32.add (local.get $s) (i32.mul (local.get $b) (local.get $sstride)))
        (call $perm_at (call $layout (call $d_kind (local.get $m)))))
      (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb)))))

  ;; quantizeBlockInt8 of 32 f32 at src: i16 values to dst in the order of `perm` (dst[k] = q[perm[k]]),
  ;; the scale to *sp. The maximum skips NaN as std::max does (pmax keeps the accumulator); the
  ;; rounding is the scalar rule in four lanes: nearest, then trunc_sat (NaN -> 0) and a clamp.
  (func $quant_block (param $src i32) (param $dst i32) (param $sp i32) (param $perm i32)
    (local $m v128) (local $amax f32) (local $inv v128) (local $lo v128) (local $hi v128)
    (local.set $amax (call $amax32 (local.get $src)))
    (if (f32.eq (local.get $amax) (f32.const 0))
      (then
        (call $zero (local.get $dst) (i32.const 64))
        (f32.store (local.get $sp) (f32.const 0))
        (return)))
    (local.set $inv (f32x4.splat (f32.div (f32.const 127) (local.get $amax))))
    ;; the 32 values as bytes (|q| <= 127, exact), permuted, then widened back to i16
    (local.set $lo (call $q8x16 (local.get $src) (local.get $inv) (local.get $amax)))
    (local.set $hi (call $q8x16 (i32.add (local.get $src) (i32.const 64)) (local.get $inv) (local.get $amax)))
    (local.set $m (call $pick32 (local.get $lo) (local.get $hi) (v128.load (local.get $perm))))
    (v128.store (local.get $dst) (i16x8.extend_low_i8x16_s (local.get $m)))
    (v128.store offset=16 (local.get $dst) (i16x8.extend_high_i8x16_s (local.get $m)))
    (local.set $m (call $pick32 (local.get $lo) (local.get $hi) (v128.load offset=16 (local.get $perm))))
    (v128.store offset=32 (local.get $dst) (i16x8.extend_low_i8x16_s (local.get $m)))
    (v128.store offset=48 (local.get $dst) (i16x8.extend_high_i8x16_s (local.get $m)))
    (f32.store (local.get $sp) (f32.div (local.get $amax) (f32.const 127))))

  ;; Byte k of the result = byte idx[k] of the 32 bytes a ++ b (idx < 32): a swizzle gives 0 for an
  ;; index of 16 or more (idx - 16 wraps to 240 and up for the first half), so one of the two is 0.
  (func $pick32 (param $a v128) (param $b v128) (param $idx v128) (result v128)
    (v128.or (i8x16.swizzle (local.get $a) (local.get $idx))
             (i8x16.swizzle (local.get $b) (i8x16.sub (local.get $idx) (i8x16.splat (i32.const 16))))))

  ;; The int8 rule of quantizeBlockInt8 in four lanes: clamp(trunc_sat(nearest(x inv)), -127, 127).
  (func $q8x4 (param $x v128) (param $inv v128) (result v128)
    (i32x4.min_s (i32x4.max_s (i32x4.trunc_sat_f32x4_s (f32x4.nearest (f32x4.mul (local.get $x) (local.get $inv))))
                              (i32x4.splat (i32.const -127)))
                 (i32x4.splat (i32.const 127))))

  ;; Row kernels: the sum over groups of norm x sum over blocks of (exact int32 block dot) x block
  ;; scale, for one packed row against the prepared activation (PREPQ/PREPS); the caller multiplies
  ;; by the int8-level scale. `mask` = blocks per group - 1; `tbl` = the int8 levels for swizzle.
  ;; The f32 sums run in the reference's order (blocks, then groups, one by one): an f32 result that
  ;; differs by one ulp can round to a different int8 in the next product, so the order matters.

  ;; The level (int8, from the level table tbl) of crumb t / 2 of each of 16 bytes w: crumb c of byte
  ;; j is column 4j + c (t = 0, 2, 4, 6).
  (func $crumbs (param $w v128) (param $tbl v128) (param $t i32) (result v128)
    (i8x16.swizzle (local.get $tbl) (v128.and (i8x16.shr_u (local.get $w) (local.get $t)) (i8x16.splat (i32.const 3)))))

  ;; A 3-bit block's 12 bytes at p as four 24-bit words, one per i32 lane (index t of word m is
  ;; column 8m + t).
  (func $words3 (param $p i32) (result v128)
    (i8x16.swizzle (v128.load (local.get $p)) (v128.const i8x16 0 1 2 0x80 3 4 5 0x80 6 7 8 0x80 9 10 11 0x80)))

  ;; The levels of indices s/3 .. s/3 + 3 of each word (s = 0: indices 0..3, s = 12: 4..7), as 16
  ;; bytes: index t of word m at byte 4 (t mod 4) + m.
  (func $levels3 (param $w v128) (param $tbl v128) (param $s i32) (result v128)
    (local $seven v128)
    (local.set $seven (i32x4.splat (i32.const 7)))
    (i8x16.swizzle (local.get $tbl) (i8x16.narrow_i16x8_u
      (i16x8.narrow_i32x4_u (v128.and (i32x4.shr_u (local.get $w) (local.get $s)) (local.get $seven))
                            (v128.and (i32x4.shr_u (local.get $w) (i32.add (local.get $s) (i32.const 3))) (local.get $seven)))
      (i16x8.narrow_i32x4_u (v128.and (i32x4.shr_u (local.get $w) (i32.add (local.get $s) (i32.const 6))) (local.get $seven))
                            (v128.and (i32x4.shr_u (local.get $w) (i32.add (local.get $s) (i32.const 9))) (local.get $seven))))))

  ;; The sum of the four i32 lanes of d (a block's exact dot).
  (func $hsum (param $d v128) (result i32)
    (i32.add (i32.add (i32x4.extract_lane 0 (local.get $d)) (i32x4.extract_lane 1 (local.get $d)))
             (i32.add (i32x4.extract_lane 2 (local.get $d)) (i32x4.extract_lane 3 (local.get $d)))))

  ;; 2-bit and ternary rows: 16 bytes = 64 columns = two blocks; crumb t of byte j is column 4j + t.
  (func $row2 (param $p i32) (param $np i32) (param $nb i32) (param $mask i32) (param $tbl v128) (result f32)
    (local $xq i32) (local $xs i32) (local $b i32) (local $w v128) (local $l0 v128) (local $l1 v128)
    (local $l2 v128) (local $l3 v128) (local $d v128) (local $gs f32) (local $acc f32)
    (local.set $xq (i32.load (global.get $P_PREPQ)))
    (local.set $xs (i32.load (global.get $P_PREPS)))
    (loop $pairs
      (local.set $w (v128.load (local.get $p)))
      (local.set $l0 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 0)))
      (local.set $l1 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 2)))
      (local.set $l2 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 4)))
      (local.set $l3 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 6)))
      (local.set $d (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $l0)) (v128.load (local.get $xq)))
                   (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $l1)) (v128.load offset=16 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $l2)) (v128.load offset=32 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $l3)) (v128.load offset=48 (local.get $xq))))))
      (local.set $gs (f32.add (local.get $gs) (f32.mul (f32.convert_i32_s (call $hsum (local.get $d))) (f32.load (local.get $xs)))))
      (if (i32.eq (i32.and (local.get $b) (local.get $mask)) (local.get $mask))
        (then (local.set $acc (f32.add (local.get $acc) (f32.mul (call $f16 (i32.load16_u (local.get $np))) (local.get $gs))))
              (local.set $np (i32.add (local.get $np) (i32.const 2)))
              (local.set $gs (f32.const 0))))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (if (i32.lt_u (local.get $b) (local.get $nb))
        (then
          (local.set $d (i32x4.add
            (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $l0)) (v128.load offset=64 (local.get $xq)))
                       (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $l1)) (v128.load offset=80 (local.get $xq))))
            (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $l2)) (v128.load offset=96 (local.get $xq)))
                       (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $l3)) (v128.load offset=112 (local.get $xq))))))
          (local.set $gs (f32.add (local.get $gs) (f32.mul (f32.convert_i32_s (call $hsum (local.get $d))) (f32.load offset=4 (local.get $xs)))))
          (if (i32.eq (i32.and (local.get $b) (local.get $mask)) (local.get $mask))
            (then (local.set $acc (f32.add (local.get $acc) (f32.mul (call $f16 (i32.load16_u (local.get $np))) (local.get $gs))))
                  (local.set $np (i32.add (local.get $np) (i32.const 2)))
                  (local.set $gs (f32.const 0))))
          (local.set $b (i32.add (local.get $b) (i32.const 1)))))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (local.set $xq (i32.add (local.get $xq) (i32.const 128)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 8)))
      (br_if $pairs (i32.lt_u (local.get $b) (local.get $nb))))
    (local.get $acc))

  ;; 4-bit rows: 16 bytes = one block; the low nibble of byte j is column 2j, the high one 2j + 1.
  (func $row4 (param $p i32) (param $np i32) (param $nb i32) (param $mask i32) (param $tbl v128) (result f32)
    (local $xq i32) (local $xs i32) (local $b i32) (local $w v128) (local $lo v128) (local $hi v128)
    (local $d v128) (local $gs f32) (local $acc f32)
    (local.set $xq (i32.load (global.get $P_PREPQ)))
    (local.set $xs (i32.load (global.get $P_PREPS)))
    (loop $blocks
      (local.set $w (v128.load (local.get $p)))
      (local.set $lo (i8x16.swizzle (local.get $tbl) (v128.and (local.get $w) (i8x16.splat (i32.const 15)))))
      (local.set $hi (i8x16.swizzle (local.get $tbl) (i8x16.shr_u (local.get $w) (i32.const 4))))
      (local.set $d (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $lo)) (v128.load (local.get $xq)))
                   (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $lo)) (v128.load offset=16 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $hi)) (v128.load offset=32 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $hi)) (v128.load offset=48 (local.get $xq))))))
      (local.set $gs (f32.add (local.get $gs) (f32.mul (f32.convert_i32_s (call $hsum (local.get $d))) (f32.load (local.get $xs)))))
      (if (i32.eq (i32.and (local.get $b) (local.get $mask)) (local.get $mask))
        (then (local.set $acc (f32.add (local.get $acc) (f32.mul (call $f16 (i32.load16_u (local.get $np))) (local.get $gs))))
              (local.set $np (i32.add (local.get $np) (i32.const 2)))
              (local.set $gs (f32.const 0))))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
      (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
    (local.get $acc))

  ;; 3-bit rows: 12 bytes = one block = four 24-bit words of 8 indices; index t of word m is column
  ;; 8m + t. The words are gathered into i32 lanes, shifted out, narrowed to bytes, then looked up.
  (func $row3 (param $p i32) (param $np i32) (param $nb i32) (param $mask i32) (param $tbl v128) (result f32)
    (local $xq i32) (local $xs i32) (local $b i32) (local $w v128) (local $la v128) (local $lb v128)
    (local $d v128) (local $gs f32) (local $acc f32)
    (local.set $xq (i32.load (global.get $P_PREPQ)))
    (local.set $xs (i32.load (global.get $P_PREPS)))
    (loop $blocks
      (local.set $w (call $words3 (local.get $p)))
      (local.set $la (call $levels3 (local.get $w) (local.get $tbl) (i32.const 0)))
      (local.set $lb (call $levels3 (local.get $w) (local.get $tbl) (i32.const 12)))
      (local.set $d (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $la)) (v128.load (local.get $xq)))
                   (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $la)) (v128.load offset=16 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $lb)) (v128.load offset=32 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $lb)) (v128.load offset=48 (local.get $xq))))))
      (local.set $gs (f32.add (local.get $gs) (f32.mul (f32.convert_i32_s (call $hsum (local.get $d))) (f32.load (local.get $xs)))))
      (if (i32.eq (i32.and (local.get $b) (local.get $mask)) (local.get $mask))
        (then (local.set $acc (f32.add (local.get $acc) (f32.mul (call $f16 (i32.load16_u (local.get $np))) (local.get $gs))))
              (local.set $np (i32.add (local.get $np) (i32.const 2)))
              (local.set $gs (f32.const 0))))
      (local.set $p (i32.add (local.get $p) (i32.const 12)))
      (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
      (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
    (local.get $acc))

  ;; Fast kernels for 2-bit, ternary and 4-bit matrices with groups that are multiples of 128 (every
  ;; real archive): four blocks per round. The four exact int32 block dots are summed across lanes
  ;; together (one transpose), converted and scaled in one vector, and then added to the group sum
  ;; one lane at a time, in block order: the same f32 operations in the same order as the general
  ;; kernels, with fewer instructions. (3-bit matrices always take the general kernel.)

  ;; 2-bit and ternary, groups of 128k: 32 bytes = four blocks per round. `mask` = quads per group - 1.
  ;; (Written out in full: this loop is most of the work of a step, and calls are not inlined.)
  ;; Cheap expansion: a nibble holds crumbs t and t + 1, so two 16-entry tables (t0[n] = level of
  ;; n & 3, t1[n] = level of n >> 2) turn the low and high nibbles into the four crumb levels with
  ;; one 16-bit shift (no 8-bit shift: wasm has none, V8 emulates it with a shift and a mask). The
  ;; levels are widened by interleaving with zero (level x 256 per i16 lane, one unpack each); the
  ;; block dots are then exactly 256 x the true ones (|sum| < 2^28), shifted back before conversion.
  (func $row2q (param $p i32) (param $np i32) (param $nb i32) (param $mask i32) (param $tbl v128) (result f32)
    (local $xq i32) (local $xs i32) (local $q i32) (local $w v128) (local $l0 v128) (local $l1 v128) (local $l2 v128)
    (local $l3 v128) (local $da v128) (local $db v128) (local $dc v128) (local $dd v128) (local $v v128)
    (local $gs f32) (local $acc f32) (local $f16t i32) (local $nf f32) (local $m15 v128) (local $e i32)
    (local $t0 v128) (local $t1 v128) (local $z v128) (local $nl v128) (local $nh v128)
    (local.set $f16t (i32.load (global.get $P_F16)))
    (local.set $xq (i32.load (global.get $P_PREPQ)))
    (local.set $xs (i32.load (global.get $P_PREPS)))
    (local.set $m15 (i8x16.splat (i32.const 15)))
    (local.set $t0 (i8x16.swizzle (local.get $tbl) (v128.const i8x16 0 1 2 3 0 1 2 3 0 1 2 3 0 1 2 3)))
    (local.set $t1 (i8x16.swizzle (local.get $tbl) (v128.const i8x16 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3)))
    (local.set $e (i32.add (local.get $p) (i32.shl (local.get $nb) (i32.const 3))))
    (loop $quads
      ;; blocks 0 and 1: bytes 0..15 (crumb t of byte j is column 4j + t)
      (local.set $w (v128.load (local.get $p)))
      (local.set $nl (v128.and (local.get $w) (local.get $m15)))
      (local.set $nh (v128.and (i16x8.shr_u (local.get $w) (i32.const 4)) (local.get $m15)))
      (local.set $l0 (i8x16.swizzle (local.get $t0) (local.get $nl)))
      (local.set $l1 (i8x16.swizzle (local.get $t1) (local.get $nl)))
      (local.set $l2 (i8x16.swizzle (local.get $t0) (local.get $nh)))
      (local.set $l3 (i8x16.swizzle (local.get $t1) (local.get $nh)))
      (local.set $da (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l0)) (v128.load (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l1)) (v128.load offset=16 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l2)) (v128.load offset=32 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l3)) (v128.load offset=48 (local.get $xq))))))
      (local.set $db (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l0)) (v128.load offset=64 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l1)) (v128.load offset=80 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l2)) (v128.load offset=96 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l3)) (v128.load offset=112 (local.get $xq))))))
      ;; blocks 2 and 3: bytes 16..31
      (local.set $w (v128.load offset=16 (local.get $p)))
      (local.set $nl (v128.and (local.get $w) (local.get $m15)))
      (local.set $nh (v128.and (i16x8.shr_u (local.get $w) (i32.const 4)) (local.get $m15)))
      (local.set $l0 (i8x16.swizzle (local.get $t0) (local.get $nl)))
      (local.set $l1 (i8x16.swizzle (local.get $t1) (local.get $nl)))
      (local.set $l2 (i8x16.swizzle (local.get $t0) (local.get $nh)))
      (local.set $l3 (i8x16.swizzle (local.get $t1) (local.get $nh)))
      (local.set $dc (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l0)) (v128.load offset=128 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l1)) (v128.load offset=144 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l2)) (v128.load offset=160 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $l3)) (v128.load offset=176 (local.get $xq))))))
      (local.set $dd (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l0)) (v128.load offset=192 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l1)) (v128.load offset=208 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l2)) (v128.load offset=224 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $l3)) (v128.load offset=240 (local.get $xq))))))
      ;; the four block sums (a transpose of lane sums, exact), x the block scales, added in order
      (local.set $da (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $da) (local.get $db))
                                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $da) (local.get $db))))
      (local.set $dc (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $dc) (local.get $dd))
                                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $dc) (local.get $dd))))
      (local.set $v (f32x4.mul (v128.load (local.get $xs)) (f32x4.convert_i32x4_s (i32x4.shr_s (i32x4.add
        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $da) (local.get $dc))
        (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $da) (local.get $dc))) (i32.const 8)))))
      (local.set $gs (f32.add (f32.add (f32.add (f32.add (local.get $gs) (f32x4.extract_lane 0 (local.get $v)))
        (f32x4.extract_lane 1 (local.get $v))) (f32x4.extract_lane 2 (local.get $v))) (f32x4.extract_lane 3 (local.get $v))))
      ;; the group's fp16 norm, widened by the table
      (local.set $nf (f32.load (i32.add (local.get $f16t) (i32.shl (i32.load16_u (local.get $np)) (i32.const 2)))))
      (if (i32.eqz (i32.and (local.tee $q (i32.add (local.get $q) (i32.const 1))) (local.get $mask)))
        (then (local.set $acc (f32.add (local.get $acc) (f32.mul (local.get $nf) (local.get $gs))))
              (local.set $np (i32.add (local.get $np) (i32.const 2)))
              (local.set $gs (f32.const 0))))
      (local.set $xq (i32.add (local.get $xq) (i32.const 256)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 16)))
      (br_if $quads (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 32))) (local.get $e))))
    (local.get $acc))

  ;; 4-bit, groups of 128k: 64 bytes = four blocks per round (low nibble of byte j: column 2j,
  ;; high nibble: 2j + 1). Written out in full like $row2q, with its 16-bit shift and its widening
  ;; by interleaving with zero (block dots x 256, shifted back).
  (func $row4q (param $p i32) (param $np i32) (param $nb i32) (param $mask i32) (param $tbl v128) (result f32)
    (local $xq i32) (local $xs i32) (local $q i32) (local $w v128) (local $lo v128) (local $hi v128)
    (local $da v128) (local $db v128) (local $dc v128) (local $dd v128) (local $v v128) (local $m15 v128)
    (local $gs f32) (local $acc f32) (local $f16t i32) (local $nf f32) (local $e i32) (local $z v128)
    (local.set $f16t (i32.load (global.get $P_F16)))
    (local.set $xq (i32.load (global.get $P_PREPQ)))
    (local.set $xs (i32.load (global.get $P_PREPS)))
    (local.set $m15 (i8x16.splat (i32.const 15)))
    (local.set $e (i32.add (local.get $p) (i32.shl (local.get $nb) (i32.const 4))))
    (loop $quads
      (local.set $w (v128.load (local.get $p)))
      (local.set $lo (i8x16.swizzle (local.get $tbl) (v128.and (local.get $w) (local.get $m15))))
      (local.set $hi (i8x16.swizzle (local.get $tbl) (v128.and (i16x8.shr_u (local.get $w) (i32.const 4)) (local.get $m15))))
      (local.set $da (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $lo)) (v128.load (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $lo)) (v128.load offset=16 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $hi)) (v128.load offset=32 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $hi)) (v128.load offset=48 (local.get $xq))))))
      (local.set $w (v128.load offset=16 (local.get $p)))
      (local.set $lo (i8x16.swizzle (local.get $tbl) (v128.and (local.get $w) (local.get $m15))))
      (local.set $hi (i8x16.swizzle (local.get $tbl) (v128.and (i16x8.shr_u (local.get $w) (i32.const 4)) (local.get $m15))))
      (local.set $db (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $lo)) (v128.load offset=64 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $lo)) (v128.load offset=80 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $hi)) (v128.load offset=96 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $hi)) (v128.load offset=112 (local.get $xq))))))
      (local.set $w (v128.load offset=32 (local.get $p)))
      (local.set $lo (i8x16.swizzle (local.get $tbl) (v128.and (local.get $w) (local.get $m15))))
      (local.set $hi (i8x16.swizzle (local.get $tbl) (v128.and (i16x8.shr_u (local.get $w) (i32.const 4)) (local.get $m15))))
      (local.set $dc (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $lo)) (v128.load offset=128 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $lo)) (v128.load offset=144 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $hi)) (v128.load offset=160 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $hi)) (v128.load offset=176 (local.get $xq))))))
      (local.set $w (v128.load offset=48 (local.get $p)))
      (local.set $lo (i8x16.swizzle (local.get $tbl) (v128.and (local.get $w) (local.get $m15))))
      (local.set $hi (i8x16.swizzle (local.get $tbl) (v128.and (i16x8.shr_u (local.get $w) (i32.const 4)) (local.get $m15))))
      (local.set $dd (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $lo)) (v128.load offset=192 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $lo)) (v128.load offset=208 (local.get $xq))))
        (i32x4.add (i32x4.dot_i16x8_s (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $z) (local.get $hi)) (v128.load offset=224 (local.get $xq)))
                   (i32x4.dot_i16x8_s (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $z) (local.get $hi)) (v128.load offset=240 (local.get $xq))))))
      (local.set $da (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $da) (local.get $db))
                                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $da) (local.get $db))))
      (local.set $dc (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $dc) (local.get $dd))
                                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $dc) (local.get $dd))))
      (local.set $v (f32x4.mul (v128.load (local.get $xs)) (f32x4.convert_i32x4_s (i32x4.shr_s (i32x4.add
        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $da) (local.get $dc))
        (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $da) (local.get $dc))) (i32.const 8)))))
      (local.set $gs (f32.add (f32.add (f32.add (f32.add (local.get $gs) (f32x4.extract_lane 0 (local.get $v)))
        (f32x4.extract_lane 1 (local.get $v))) (f32x4.extract_lane 2 (local.get $v))) (f32x4.extract_lane 3 (local.get $v))))
      ;; the group's fp16 norm, widened by the table
      (local.set $nf (f32.load (i32.add (local.get $f16t) (i32.shl (i32.load16_u (local.get $np)) (i32.const 2)))))
      (if (i32.eqz (i32.and (local.tee $q (i32.add (local.get $q) (i32.const 1))) (local.get $mask)))
        (then (local.set $acc (f32.add (local.get $acc) (f32.mul (local.get $nf) (local.get $gs))))
              (local.set $np (i32.add (local.get $np) (i32.const 2)))
              (local.set $gs (f32.const 0))))
      (local.set $xq (i32.add (local.get $xq) (i32.const 256)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 16)))
      (br_if $quads (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 64))) (local.get $e))))
    (local.get $acc))

  ;; out[r - first] = (W x)[r] for rows [first + b, first + e) of CQ matrix m, x already prepared:
  ;; the four-block kernels for 2-bit, ternary and 4-bit with groups of 128k, else the general ones.
  (func $mv_rows (param $m i32) (param $first i32) (param $b i32) (param $e i32) (param $out i32)
    (call $mv_rows_by (local.get $m) (local.get $first) (local.get $b) (local.get $e) (local.get $out)
      (i32.eqz (i32.or (i32.and (call $d_group (local.get $m)) (i32.const 127)) (i32.eq (call $d_kind (local.get $m)) (global.get $KIND_3BIT))))))

  ;; $mv_rows with the four-block kernel (fast = 1: m must allow it) or the general one (fast = 0).
  (func $mv_rows_by (param $m i32) (param $first i32) (param $b i32) (param $e i32) (param $out i32) (param $fast i32)
    (local $kind i32) (local $nb i32) (local $mask i32) (local $tbl v128) (local $cs f32) (local $row i32)
    (local $rb i32) (local $ng i32) (local $y f32) (local $fn i32)
    (local.set $kind (call $d_kind (local.get $m)))
    (local.set $nb (i32.shr_u (call $d_pad (local.get $m)) (i32.const 5)))
    (local.set $mask (i32.sub (i32.shr_u (call $d_group (local.get $m)) (i32.const 5)) (i32.const 1)))
    (local.set $fn (i32.add (global.get $ROW_KERNEL) (local.get $kind)))
    (if (local.get $fast)
      (then  ;; the four-block kernels, `mask` counted in quads
        (local.set $fn (i32.add (global.get $ROW_KERNEL_QUAD) (local.get $kind)))
        (local.set $mask (i32.sub (i32.shr_u (call $d_group (local.get $m)) (i32.const 7)) (i32.const 1)))))
    (local.set $tbl (v128.load (call $kind_cbq (local.get $kind))))
    (local.set $cs (call $cb_scale (local.get $m)))
    (local.set $rb (call $d_row_bytes (local.get $m)))
    (local.set $ng (i32.shl (call $d_groups (local.get $m)) (i32.const 1)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $b) (local.get $e)))
      (local.set $row (i32.add (local.get $first) (local.get $b)))
      (local.set $y (call_indirect $jobs (type $row_t)
        (i32.add (call $d_data (local.get $m)) (i32.mul (local.get $row) (local.get $rb)))
        (i32.add (call $d_norms (local.get $m)) (i32.mul (local.get $row) (local.get $ng)))
        (local.get $nb) (local.get $mask) (local.get $tbl) (local.get $fn)))
      (f32.store (i32.add (local.get $out) (i32.shl (local.get $b) (i32.const 2))) (f32.mul (local.get $y) (local.get $cs)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $rows))))

  ;; JOB_MATVEC: rows [b, e) of the product described by ARGS (MV_*: matrix, output, first row).
  (func $job_matvec (param $b i32) (param $e i32) (param $slot i32)
    (call $mv_rows (i32.load (i32.add (global.get $ARGS) (global.get $MV_MATRIX)))
      (i32.load (i32.add (global.get $ARGS) (global.get $MV_FIRST)))
      (local.get $b) (local.get $e) (i32.load (i32.add (global.get $ARGS) (global.get $MV_OUT)))))

  ;; out[0 .. rowEnd - rowBegin) = rows [rowBegin, rowEnd) of W x for the x last prepared (prepared
  ;; again when m is grouped, padded or laid out differently). Wide products are split across threads.
  (func $product (param $m i32) (param $out i32) (param $rowBegin i32) (param $rowEnd i32)
    (local $n i32)
    (if (i32.or (i32.or (i32.ne (i32.load (global.get $PREP_COLS)) (call $d_cols (local.get $m)))
                        (i32.ne (i32.load (global.get $PREP_GROUP)) (call $d_group (local.get $m))))
                (i32.ne (i32.load (global.get $PREP_LAYOUT)) (call $layout (call $d_kind (local.get $m)))))
      (then (call $prepare (local.get $m) (i32.load (global.get $P_PREP_SRC)))))
    (local.set $n (i32.sub (local.get $rowEnd) (local.get $rowBegin)))
    (if (i32.and (i32.ge_u (local.get $n) (i32.const 64)) (i32.gt_u (i32.load (global.get $THREADS)) (i32.const 1)))
      (then
        (i32.store (i32.add (global.get $ARGS) (global.get $MV_MATRIX)) (local.get $m))
        (i32.store (i32.add (global.get $ARGS) (global.get $MV_OUT)) (local.get $out))
        (i32.store (i32.add (global.get $ARGS) (global.get $MV_FIRST)) (local.get $rowBegin))
        (call $run_job (global.get $JOB_MATVEC) (local.get $n) (call $chunk_for (local.get $n) (i32.const 16))))
      (else (call $mv_rows (local.get $m) (local.get $rowBegin) (i32.const 0) (local.get $n) (local.get $out)))))

  ;; Sets product k (0..3) of the next fused job: all the rows of matrix m into out.
  (func $fuse (param $k i32) (param $m i32) (param $out i32)
    (i32.store (i32.add (call $fused (local.get $k)) (global.get $FU_MATRIX)) (local.get $m))
    (i32.store (i32.add (call $fused (local.get $k)) (global.get $FU_OUT)) (local.get $out)))

  ;; Entry k of FUSED.
  (func $fused (param $k i32) (result i32)
    (i32.add (global.get $FUSED) (i32.mul (local.get $k) (global.get $FU_SIZE))))

  ;; The n products set by $fuse, which read one prepared x (q, k, v and gate; an engram site's key and
  ;; value), as one job: their rows are split across the threads together, so that one
  ;; synchronisation serves them all. Matrices whose layout differs from the first's run on their own.
  (func $fused_products (param $n i32)
    (local $k i32) (local $m0 i32) (local $m i32) (local $total i32) (local $same i32)
    (local.set $m0 (i32.load (i32.add (call $fused (i32.const 0)) (global.get $FU_MATRIX))))
    (local.set $same (i32.const 1))
    (loop $each
      (local.set $m (i32.load (i32.add (call $fused (local.get $k)) (global.get $FU_MATRIX))))
      (local.set $total (i32.add (local.get $total) (call $d_rows (local.get $m))))
      (local.set $same (i32.and (local.get $same) (i32.and
        (i32.and (i32.eq (call $d_cols (local.get $m)) (call $d_cols (local.get $m0)))
                 (i32.eq (call $d_group (local.get $m)) (call $d_group (local.get $m0))))
        (i32.eq (call $layout (call $d_kind (local.get $m))) (call $layout (call $d_kind (local.get $m0)))))))
      (br_if $each (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $n))))
    (if (i32.or (i32.eqz (local.get $same)) (i32.le_u (i32.load (global.get $THREADS)) (i32.const 1)))
      (then  ;; one by one (each product still split across threads when it is wide)
        (local.set $k (i32.const 0))
        (loop $one
          (local.set $m (i32.load (i32.add (call $fused (local.get $k)) (global.get $FU_MATRIX))))
          (call $product (local.get $m) (i32.load (i32.add (call $fused (local.get $k)) (global.get $FU_OUT)))
            (i32.const 0) (call $d_rows (local.get $m)))
          (br_if $one (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $n))))
        (return)))
    (if (i32.or (i32.or (i32.ne (i32.load (global.get $PREP_COLS)) (call $d_cols (local.get $m0)))
                        (i32.ne (i32.load (global.get $PREP_GROUP)) (call $d_group (local.get $m0))))
                (i32.ne (i32.load (global.get $PREP_LAYOUT)) (call $layout (call $d_kind (local.get $m0)))))
      (then (call $prepare (local.get $m0) (i32.load (global.get $P_PREP_SRC)))))
    (i32.store (global.get $FUSED_N) (local.get $n))
    (call $run_job (global.get $JOB_FUSED) (local.get $total) (call $chunk_for (local.get $total) (i32.const 16))))

  ;; JOB_FUSED: rows [b, e) of the fused products, counted through them in order.
  (func $job_fused (param $b i32) (param $e i32) (param $slot i32)
    (local $k i32) (local $start i32) (local $m i32) (local $lo i32) (local $hi i32) (local $end i32)
    (loop $each
      (local.set $m (i32.load (i32.add (call $fused (local.get $k)) (global.get $FU_MATRIX))))
      (local.set $end (i32.add (local.get $start) (call $d_rows (local.get $m))))
      (local.set $lo (select (local.get $b) (local.get $start) (i32.gt_u (local.get $b) (local.get $start))))
      (local.set $hi (select (local.get $e) (local.get $end) (i32.lt_u (local.get $e) (local.get $end))))
      (if (i32.lt_u (local.get $lo) (local.get $hi))
        (then (call $mv_rows (local.get $m) (i32.const 0) (i32.sub (local.get $lo) (local.get $start)) (i32.sub (local.get $hi) (local.get $start))
                (i32.load (i32.add (call $fused (local.get $k)) (global.get $FU_OUT))))))
      (local.set $start (local.get $end))
      (br_if $each (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.load (global.get $FUSED_N))))))

  ;; Raw stored index of column `col` in a packed row (LSB-first bit stream, ib bits per index).
  (func $raw_index (param $row i32) (param $ib i32) (param $col i32) (result i32)
    (local $bit i32)
    (local.set $bit (i32.mul (local.get $col) (local.get $ib)))
    (i32.and (i32.shr_u (i32.load16_u (i32.add (local.get $row) (i32.shr_u (local.get $bit) (i32.const 3))))
                        (i32.and (local.get $bit) (i32.const 7)))
             (i32.sub (i32.shl (i32.const 1) (local.get $ib)) (i32.const 1))))

  ;; dequantizeRow: row `row` of CQ matrix m as m.cols f32 at out: H_G (norm x level[idx]) per group.
  (func $dequant_row (export "test_dequant_row") (param $m i32) (param $row i32) (param $out i32)
    (local $G i32) (local $g i32) (local $k i32) (local $ib i32) (local $pr i32) (local $norm f32)
    (local $dq i32) (local $cols i32) (local $n i32)
    (local.set $G (call $d_group (local.get $m)))
    (local.set $cols (call $d_cols (local.get $m)))
    (local.set $ib (call $index_bits (call $d_bits (local.get $m))))
    (local.set $pr (i32.add (call $d_data (local.get $m)) (i32.mul (local.get $row) (call $d_row_bytes (local.get $m)))))
    (local.set $dq (i32.load (global.get $P_DQ)))
    (loop $groups
      (local.set $norm (call $f16 (i32.load16_u (i32.add (call $d_norms (local.get $m))
        (i32.shl (i32.add (i32.mul (local.get $row) (call $d_groups (local.get $m))) (local.get $g)) (i32.const 1))))))
      (local.set $k (i32.const 0))
      (loop $cols
        (f32.store (i32.add (local.get $dq) (i32.shl (local.get $k) (i32.const 2)))
          (f32.mul (local.get $norm) (call $level (local.get $m)
            (call $raw_index (local.get $pr) (local.get $ib) (i32.add (i32.mul (local.get $g) (local.get $G)) (local.get $k))))))
        (br_if $cols (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $G))))
      (call $fwht_norm (local.get $dq) (local.get $G))
      (local.set $n (i32.sub (local.get $cols) (i32.mul (local.get $g) (local.get $G))))
      (if (i32.gt_u (local.get $n) (local.get $G)) (then (local.set $n (local.get $G))))
      (memory.copy (i32.add (local.get $out) (i32.shl (i32.mul (local.get $g) (local.get $G)) (i32.const 2)))
                   (local.get $dq) (i32.shl (local.get $n) (i32.const 2)))
      (br_if $groups (i32.lt_u (local.tee $g (i32.add (local.get $g) (i32.const 1))) (call $d_groups (local.get $m))))))

  ;; Test entry: y = W x for record `rec` (x: cols f32, y: rows f32), A8 as in step; with `general`,
  ;; every row by the general kernel (any group; one thread), so that the tests check both kernels.
  ;; Returns 0, or ERR_ARG if the record is not CQ.
  (func (export "test_matvec") (param $rec i32) (param $x i32) (param $y i32) (param $general i32) (result i32)
    (local $m i32)
    (if (i32.or (i32.eqz (i32.load (global.get $LOADED))) (i32.ge_u (local.get $rec) (i32.load (global.get $NREC))))
      (then (return (global.get $ERR_ARG))))
    (local.set $m (call $rec (local.get $rec)))
    (if (i32.ne (call $d_dtype (local.get $m)) (global.get $DT_CQ)) (then (return (global.get $ERR_ARG))))
    (call $prepare (local.get $m) (local.get $x))
    (if (local.get $general)
      (then (call $mv_rows_by (local.get $m) (i32.const 0) (i32.const 0) (call $d_rows (local.get $m)) (local.get $y) (i32.const 0)))
      (else (call $product (local.get $m) (local.get $y) (i32.const 0) (call $d_rows (local.get $m)))))
    (i32.const 0))
  ;; Descriptor address of record i, and its rows and columns (for the host's tests).
  (func (export "test_record") (param $i i32) (result i32) (call $rec (local.get $i)))
  (func (export "test_record_rows") (param $i i32) (result i32) (call $d_rows (call $rec (local.get $i))))
  (func (export "test_record_cols") (param $i i32) (result i32) (call $d_cols (call $rec (local.get $i))))

  ;; ------------------------------------------------------------------------------------------
  ;; The step (design page 3, host/reference.cpp in the same order)
  ;; ------------------------------------------------------------------------------------------

  ;; 1 / sqrt(mean(x^2) + 1e-6) over n f32: the sum of squares in four interleaved partial sums, lane j
  ;; taking x_i^2 for i = j mod 4 in index order (the leftover n mod 4 values into their lanes after),
  ;; then (p0 + p1) + (p2 + p3), as the reference's invRms (numerics.md, "Sum order").
  (func $inv_rms (param $x i32) (param $n i32) (result f32)
    (local $acc v128) (local $i i32) (local $e i32) (local $v f32) (local $p0 f32) (local $p1 f32) (local $p2 f32) (local $p3 f32)
    (local.set $e (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2)))
    (if (local.get $e)
      (then
        (loop $fours
          (local.set $acc (f32x4.add (local.get $acc)
            (f32x4.mul (v128.load (i32.add (local.get $x) (local.get $i))) (v128.load (i32.add (local.get $x) (local.get $i))))))
          (br_if $fours (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $e))))))
    (local.set $p0 (f32x4.extract_lane 0 (local.get $acc)))
    (local.set $p1 (f32x4.extract_lane 1 (local.get $acc)))
    (local.set $p2 (f32x4.extract_lane 2 (local.get $acc)))
    (local.set $p3 (f32x4.extract_lane 3 (local.get $acc)))
    ;; the last n mod 4 values, x_i into part i mod 4 (0, 1, 2: the multiple of 4 just passed)
    (if (i32.lt_u (local.get $i) (i32.shl (local.get $n) (i32.const 2)))
      (then (local.set $v (f32.load (i32.add (local.get $x) (local.get $i))))
            (local.set $p0 (f32.add (local.get $p0) (f32.mul (local.get $v) (local.get $v))))))
    (if (i32.lt_u (i32.add (local.get $i) (i32.const 4)) (i32.shl (local.get $n) (i32.const 2)))
      (then (local.set $v (f32.load offset=4 (i32.add (local.get $x) (local.get $i))))
            (local.set $p1 (f32.add (local.get $p1) (f32.mul (local.get $v) (local.get $v))))))
    (if (i32.lt_u (i32.add (local.get $i) (i32.const 8)) (i32.shl (local.get $n) (i32.const 2)))
      (then (local.set $v (f32.load offset=8 (i32.add (local.get $x) (local.get $i))))
            (local.set $p2 (f32.add (local.get $p2) (f32.mul (local.get $v) (local.get $v))))))
    (f32.div (f32.const 1) (f32.sqrt (f32.add (f32.div
      (f32.add (f32.add (local.get $p0) (local.get $p1)) (f32.add (local.get $p2) (local.get $p3)))
      (f32.convert_i32_u (local.get $n))) (f32.const 1e-6)))))

  ;; out = x * inv_rms(x) * (1 + s) (ZCRMS; out may be x). n is a multiple of 4.
  (func $zcrms (param $x i32) (param $s i32) (param $n i32) (param $out i32)
    (local $inv v128) (local $i i32) (local $e i32)
    (local.set $inv (f32x4.splat (call $inv_rms (local.get $x) (local.get $n))))
    (local.set $e (i32.shl (local.get $n) (i32.const 2)))
    (loop $l
      (v128.store (i32.add (local.get $out) (local.get $i))
        (f32x4.mul (f32x4.mul (v128.load (i32.add (local.get $x) (local.get $i))) (local.get $inv))
                   (f32x4.add (v128.const f32x4 1 1 1 1) (v128.load (i32.add (local.get $s) (local.get $i))))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $e)))))

  ;; y[0..n) += a * x[0..n) (n a multiple of 4)
  (func $axpy (param $y i32) (param $a f32) (param $x i32) (param $n i32)
    (local $av v128) (local $i i32) (local $e i32)
    (local.set $av (f32x4.splat (local.get $a)))
    (local.set $e (i32.shl (local.get $n) (i32.const 2)))
    (loop $l
      (v128.store (i32.add (local.get $y) (local.get $i))
        (f32x4.add (v128.load (i32.add (local.get $y) (local.get $i)))
                   (f32x4.mul (local.get $av) (v128.load (i32.add (local.get $x) (local.get $i))))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $e)))))

  ;; logsumexp of n f32 at stride `st` bytes, maximum subtracted first.
  (func $lse (param $p i32) (param $n i32) (param $st i32) (result f32)
    (local $mx f32) (local $i i32) (local $sum f32) (local $v f32)
    (local.set $mx (f32.load (local.get $p)))
    (local.set $i (i32.const 1))
    (loop $m
      (if (i32.lt_u (local.get $i) (local.get $n))
        (then
          (local.set $v (f32.load (i32.add (local.get $p) (i32.mul (local.get $i) (local.get $st)))))
          (if (f32.lt (local.get $mx) (local.get $v)) (then (local.set $mx (local.get $v))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $m))))
    (local.set $i (i32.const 0))
    (loop $s
      (local.set $sum (f32.add (local.get $sum) (call $expf (f32.sub
        (f32.load (i32.add (local.get $p) (i32.mul (local.get $i) (local.get $st)))) (local.get $mx)))))
      (br_if $s (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (f32.add (local.get $mx) (call $logf (local.get $sum))))

  ;; Sinkhorn in the log domain on the n x n matrix at m: 20 rounds of rows then columns, then exp.
  (func $sinkhorn (param $m i32) (param $n i32)
    (if (i32.eq (local.get $n) (i32.const 4))
      (then (call $sinkhorn4 (local.get $m)))
      (else (call $sinkhorn_lanes (local.get $m) (local.get $n)))))

  ;; Test hook: $sinkhorn on the n x n f32 matrix at m, or with generic = 1 always the one-lane way.
  (func (export "test_sinkhorn") (param $m i32) (param $n i32) (param $generic i32)
    (if (local.get $generic)
      (then (call $sinkhorn_lanes (local.get $m) (local.get $n)))
      (else (call $sinkhorn (local.get $m) (local.get $n)))))

  ;; $sinkhorn for any n, one logsumexp at a time.
  (func $sinkhorn_lanes (param $m i32) (param $n i32)
    (local $it i32) (local $r i32) (local $c i32) (local $l f32) (local $p i32)
    (loop $rounds
      (local.set $r (i32.const 0))
      (loop $rows
        (local.set $p (i32.add (local.get $m) (i32.shl (i32.mul (local.get $r) (local.get $n)) (i32.const 2))))
        (local.set $l (call $lse (local.get $p) (local.get $n) (i32.const 4)))
        (local.set $c (i32.const 0))
        (loop $cs
          (f32.store (i32.add (local.get $p) (i32.shl (local.get $c) (i32.const 2)))
            (f32.sub (f32.load (i32.add (local.get $p) (i32.shl (local.get $c) (i32.const 2)))) (local.get $l)))
          (br_if $cs (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (local.get $n))))
        (br_if $rows (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $n))))
      (local.set $c (i32.const 0))
      (loop $cols
        (local.set $p (i32.add (local.get $m) (i32.shl (local.get $c) (i32.const 2))))
        (local.set $l (call $lse (local.get $p) (local.get $n) (i32.shl (local.get $n) (i32.const 2))))
        (local.set $r (i32.const 0))
        (loop $rs
          (f32.store (i32.add (local.get $p) (i32.shl (i32.mul (local.get $r) (local.get $n)) (i32.const 2)))
            (f32.sub (f32.load (i32.add (local.get $p) (i32.shl (i32.mul (local.get $r) (local.get $n)) (i32.const 2)))) (local.get $l)))
          (br_if $rs (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $n))))
        (br_if $cols (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (local.get $n))))
      (br_if $rounds (i32.lt_u (local.tee $it (i32.add (local.get $it) (i32.const 1))) (i32.const 20))))
    (local.set $r (i32.const 0))
    (loop $e
      (local.set $p (i32.add (local.get $m) (i32.shl (local.get $r) (i32.const 2))))
      (f32.store (local.get $p) (call $expf (f32.load (local.get $p))))
      (br_if $e (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (i32.mul (local.get $n) (local.get $n))))))

  ;; $sinkhorn for four lanes (every real archive), bit for bit, four logsumexps at once: the rows'
  ;; round is the columns' round of the transposed matrix, so each round transposes, takes the
  ;; columns, transposes back and takes the columns; then e^M four at a time.
  (func $sinkhorn4 (param $m i32)
    (local $it i32)
    (loop $rounds
      (call $transpose4 (local.get $m))
      (call $lse_columns4 (local.get $m))
      (call $transpose4 (local.get $m))
      (call $lse_columns4 (local.get $m))
      (br_if $rounds (i32.lt_u (local.tee $it (i32.add (local.get $it) (i32.const 1))) (i32.const 20))))
    (v128.store (local.get $m) (call $expf4 (v128.load (local.get $m))))
    (v128.store offset=16 (local.get $m) (call $expf4 (v128.load offset=16 (local.get $m))))
    (v128.store offset=32 (local.get $m) (call $expf4 (v128.load offset=32 (local.get $m))))
    (v128.store offset=48 (local.get $m) (call $expf4 (v128.load offset=48 (local.get $m)))))

  ;; The 4 x 4 f32 matrix at m, transposed in place.
  (func $transpose4 (param $m i32)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    ;; t0 = r0.0 r1.0 r0.1 r1.1, t1 = r2.0 r3.0 r2.1 r3.1, t2 = r0.2 r1.2 r0.3 r1.3, t3 = r2.2 r3.2 r2.3 r3.3
    (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (v128.load (local.get $m)) (v128.load offset=16 (local.get $m))))
    (local.set $t1 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (v128.load offset=32 (local.get $m)) (v128.load offset=48 (local.get $m))))
    (local.set $t2 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (v128.load (local.get $m)) (v128.load offset=16 (local.get $m))))
    (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (v128.load offset=32 (local.get $m)) (v128.load offset=48 (local.get $m))))
    (v128.store (local.get $m) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t1)))
    (v128.store offset=16 (local.get $m) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t1)))
    (v128.store offset=32 (local.get $m) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t2) (local.get $t3)))
    (v128.store offset=48 (local.get $m) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t2) (local.get $t3))))

  ;; Each column c of the 4 x 4 matrix at m minus its logsumexp, lane c of the rows' vectors: exactly
  ;; $lse's operations (the maximum from row 0 by "if max < v", pmax; the sum from 0 in row order).
  (func $lse_columns4 (param $m i32)
    (local $r0 v128) (local $r1 v128) (local $r2 v128) (local $r3 v128) (local $mx v128) (local $s v128)
    (local.set $r0 (v128.load (local.get $m)))
    (local.set $r1 (v128.load offset=16 (local.get $m)))
    (local.set $r2 (v128.load offset=32 (local.get $m)))
    (local.set $r3 (v128.load offset=48 (local.get $m)))
    (local.set $mx (f32x4.pmax (f32x4.pmax (f32x4.pmax (local.get $r0) (local.get $r1)) (local.get $r2)) (local.get $r3)))
    (local.set $s (f32x4.add (f32x4.add (f32x4.add (f32x4.add (v128.const i32x4 0 0 0 0)
      (call $expf4 (f32x4.sub (local.get $r0) (local.get $mx))))
      (call $expf4 (f32x4.sub (local.get $r1) (local.get $mx))))
      (call $expf4 (f32x4.sub (local.get $r2) (local.get $mx))))
      (call $expf4 (f32x4.sub (local.get $r3) (local.get $mx)))))
    (local.set $s (f32x4.add (local.get $mx) (call $logf4 (local.get $s))))
    (v128.store (local.get $m) (f32x4.sub (local.get $r0) (local.get $s)))
    (v128.store offset=16 (local.get $m) (f32x4.sub (local.get $r1) (local.get $s)))
    (v128.store offset=32 (local.get $m) (f32x4.sub (local.get $r2) (local.get $s)))
    (v128.store offset=48 (local.get $m) (f32x4.sub (local.get $r3) (local.get $s))))

  ;; $logf of each lane.
  (func $logf4 (param $x v128) (result v128)
    (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
      (f32x4.splat (call $logf (f32x4.extract_lane 0 (local.get $x))))
      (call $logf (f32x4.extract_lane 1 (local.get $x))))
      (call $logf (f32x4.extract_lane 2 (local.get $x))))
      (call $logf (f32x4.extract_lane 3 (local.get $x)))))

  ;; Copies n f32 to the trace at float offset `at` when tracing; returns at + n.
  (func $trace (param $src i32) (param $n i32) (param $at i32) (result i32)
    (if (i32.load (global.get $P_TRACE))
      (then (memory.copy (i32.add (i32.load (global.get $P_TRACE)) (i32.shl (local.get $at) (i32.const 2)))
                         (local.get $src) (i32.shl (local.get $n) (i32.const 2)))))
    (i32.add (local.get $at) (local.get $n)))

  ;; Floats in a trace: embedding d; per site e (tables x sub_dim), k d, v' d; per layer 2 lanes d.
  (func $trace_size (export "trace_floats") (result i32)
    (i32.add (i32.add (call $g (global.get $G_D))
      (i32.mul (call $g (global.get $G_NSITE))
        (i32.add (i32.mul (call $g (global.get $G_TABLES)) (call $g (global.get $G_SUB))) (i32.shl (call $g (global.get $G_D)) (i32.const 1)))))
      (i32.shl (i32.mul (call $g (global.get $G_L)) (i32.mul (call $g (global.get $G_LANES)) (call $g (global.get $G_D)))) (i32.const 1))))

  ;; Turns the parity-ladder trace on (1) or off (0); returns the trace buffer (0 when off or no memory).
  (func (export "trace_enable") (param $on i32) (result i32)
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (i32.const 0))))
    (if (i32.eqz (local.get $on)) (then (i32.store (global.get $P_TRACE) (i32.const 0)) (return (i32.const 0))))
    (if (i32.eqz (i32.load (global.get $P_TRACE)))
      (then (drop (call $buf (global.get $P_TRACE) (i32.shl (call $trace_size) (i32.const 2))))))
    (i32.load (global.get $P_TRACE)))

  ;; engramHash: the slot-to-be of table tau (order `order`) at position p, before the modulo.
  (func $engram_hash (param $tau i32) (param $order i32) (param $p i32) (result i32)
    (local $acc i32) (local $j i32) (local $tok i32)
    (local.set $acc (i32.mul (i32.const 0x9E3779B9) (i32.add (local.get $tau) (i32.const 1))))
    (loop $l
      (if (i32.lt_u (local.get $j) (local.get $order))
        (then
          (local.set $tok (if (result i32) (i32.ge_u (local.get $p) (local.get $j))
            (then (i32.load (i32.add (i32.load (global.get $P_HIST)) (i32.shl (i32.sub (local.get $p) (local.get $j)) (i32.const 2)))))
            (else (i32.const 0))))
          (local.set $acc (i32.mul (i32.xor (local.get $acc) (local.get $tok)) (i32.const 0x01000193)))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $l))))
    (i32.xor (local.get $acc) (i32.shr_u (local.get $acc) (i32.const 15))))

  ;; 3. Engram keys and values for every site at position p (trace from float offset `at`).
  (func $engram (param $p i32) (param $at i32) (result i32)
    (local $T i32) (local $heads i32) (local $tau i32) (local $order i32) (local $s i32) (local $e i32)
    (local $E i32) (local $sub i32) (local $d i32) (local $kp i32) (local $ring i32) (local $vt i32) (local $j i32)
    (local $back i32) (local $R i32) (local $row i32)
    (local.set $T (call $g (global.get $G_TABLES)))
    (if (i32.eqz (call $g (global.get $G_NSITE))) (then (return (local.get $at))))
    (local.set $heads (i32.div_u (local.get $T) (call $g (global.get $G_NORD))))
    (local.set $sub (call $g (global.get $G_SUB)))
    (local.set $E (i32.mul (local.get $T) (local.get $sub)))
    (local.set $d (call $g (global.get $G_D)))
    (local.set $R (i32.load (global.get $RING_ROWS)))
    (loop $tables
      (local.set $order (i32.load (i32.add (global.get $G_ORD) (i32.shl (i32.div_u (local.get $tau) (local.get $heads)) (i32.const 2)))))
      (i32.store (i32.add (i32.load (global.get $P_EVALID)) (i32.shl (local.get $tau) (i32.const 2)))
        (i32.ge_u (i32.add (local.get $p) (i32.const 1)) (local.get $order)))
      (i32.store (i32.add (i32.load (global.get $P_ESLOT)) (i32.shl (local.get $tau) (i32.const 2)))
        (i32.rem_u (call $engram_hash (local.get $tau) (local.get $order) (local.get $p)) (call $g (global.get $G_SLOTS))))
      (br_if $tables (i32.lt_u (local.tee $tau (i32.add (local.get $tau) (i32.const 1))) (local.get $T))))
    (loop $sites
      (local.set $e (i32.add (i32.load (global.get $P_EE)) (i32.shl (i32.mul (local.get $s) (local.get $E)) (i32.const 2))))
      (local.set $tau (i32.const 0))
      (loop $rows
        (local.set $row (i32.add (local.get $e) (i32.shl (i32.mul (local.get $tau) (local.get $sub)) (i32.const 2))))
        (if (i32.load (i32.add (i32.load (global.get $P_EVALID)) (i32.shl (local.get $tau) (i32.const 2))))
          (then (call $dequant_row (call $r_engram (local.get $s) (global.get $E_TABLES))
                  (i32.add (i32.mul (local.get $tau) (call $g (global.get $G_SLOTS)))
                           (i32.load (i32.add (i32.load (global.get $P_ESLOT)) (i32.shl (local.get $tau) (i32.const 2)))))
                  (local.get $row)))
          (else (call $zero (local.get $row) (i32.shl (local.get $sub) (i32.const 2)))))
        (br_if $rows (i32.lt_u (local.tee $tau (i32.add (local.get $tau) (i32.const 1))) (local.get $T))))
      (local.set $kp (i32.add (i32.load (global.get $P_EK)) (i32.shl (i32.mul (local.get $s) (local.get $d)) (i32.const 2))))
      (local.set $ring (i32.add (i32.load (global.get $P_ERING)) (i32.shl (i32.mul (i32.mul (local.get $s) (local.get $R)) (local.get $d)) (i32.const 2))))
      (call $prepare (call $r_engram (local.get $s) (global.get $E_KEY)) (local.get $e))
      (call $fuse (i32.const 0) (call $r_engram (local.get $s) (global.get $E_KEY)) (local.get $kp))
      (call $fuse (i32.const 1) (call $r_engram (local.get $s) (global.get $E_VALUE))
        (i32.add (local.get $ring) (i32.shl (i32.mul (i32.rem_u (local.get $p) (local.get $R)) (local.get $d)) (i32.const 2))))
      (call $fused_products (i32.const 2))
      (local.set $vt (i32.add (i32.load (global.get $P_EV)) (i32.shl (i32.mul (local.get $s) (local.get $d)) (i32.const 2))))
      (call $zero (local.get $vt) (i32.shl (local.get $d) (i32.const 2)))
      (local.set $j (i32.const 0))
      (block $taps_done (loop $taps
        (br_if $taps_done (i32.ge_u (local.get $j) (call $g (global.get $G_TAPS))))
        (local.set $back (i32.mul (local.get $j) (call $g (global.get $G_DIL))))
        (br_if $taps_done (i32.gt_u (local.get $back) (local.get $p)))
        (call $mul_add (local.get $vt)
          (i32.add (call $fdata (call $r_engram (local.get $s) (global.get $E_TAPS))) (i32.shl (i32.mul (local.get $j) (local.get $d)) (i32.const 2)))
          (i32.add (local.get $ring) (i32.shl (i32.mul (i32.rem_u (i32.sub (local.get $p) (local.get $back)) (local.get $R)) (local.get $d)) (i32.const 2)))
          (local.get $d))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $taps)))
      (local.set $at (call $trace (local.get $e) (local.get $E) (local.get $at)))
      (local.set $at (call $trace (local.get $kp) (local.get $d) (local.get $at)))
      (local.set $at (call $trace (local.get $vt) (local.get $d) (local.get $at)))
      (br_if $sites (i32.lt_u (local.tee $s (i32.add (local.get $s) (i32.const 1))) (call $g (global.get $G_NSITE)))))
    (local.get $at))

  ;; y[i] += a[i] * x[i] over n f32 (n a multiple of 4)
  (func $mul_add (param $y i32) (param $a i32) (param $x i32) (param $n i32)
    (local $i i32) (local $e i32)
    (local.set $e (i32.shl (local.get $n) (i32.const 2)))
    (loop $l
      (v128.store (i32.add (local.get $y) (local.get $i))
        (f32x4.add (v128.load (i32.add (local.get $y) (local.get $i)))
                   (f32x4.mul (v128.load (i32.add (local.get $a) (local.get $i))) (v128.load (i32.add (local.get $x) (local.get $i))))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $e)))))

  ;; 4a-f. mHC coefficients of layer i: hpre, hpost and the Sinkhorn routing P from nx = rmsunit(X).
  (func $mhc_coeffs (param $i i32)
    (local $lanes i32) (local $ld i32) (local $k i32) (local $ell i32) (local $ll i32) (local $v f32)
    (local.set $lanes (call $g (global.get $G_LANES)))
    (local.set $ld (i32.mul (local.get $lanes) (call $g (global.get $G_D))))
    (local.set $ell (i32.rem_u (local.get $i) (local.get $lanes)))
    (local.set $ll (i32.mul (local.get $lanes) (local.get $lanes)))
    (memory.copy (i32.load (global.get $P_NX)) (i32.load (global.get $P_X)) (i32.shl (local.get $ld) (i32.const 2)))
    (call $scale (i32.load (global.get $P_NX)) (local.get $ld) (call $inv_rms (i32.load (global.get $P_NX)) (local.get $ld)))
    (call $prepare (call $r_mhc (global.get $M_PHI_PRE)) (i32.load (global.get $P_NX)))
    (call $product (call $r_mhc (global.get $M_PHI_PRE)) (i32.load (global.get $P_HPRE))
      (i32.mul (local.get $lanes) (local.get $i)) (i32.mul (local.get $lanes) (i32.add (local.get $i) (i32.const 1))))
    (call $product (call $r_mhc (global.get $M_PHI_POST)) (i32.load (global.get $P_HPOST))
      (i32.mul (local.get $lanes) (local.get $i)) (i32.mul (local.get $lanes) (i32.add (local.get $i) (i32.const 1))))
    (call $product (call $r_mhc (global.get $M_PHI_RES)) (i32.load (global.get $P_ROUTE))
      (i32.mul (local.get $ll) (local.get $i)) (i32.mul (local.get $ll) (i32.add (local.get $i) (i32.const 1))))
    (loop $lanes_
      ;; hpre_k = sigmoid(a_pre[i] phi + b_pre[i,k] + (+4 | -4)); hpost_k = 2 sigmoid(a_post[i] phi + b_post[i,k] + (0 | -4))
      (call $set_coeff (global.get $P_HPRE) (global.get $M_A_PRE) (global.get $M_B_PRE) (local.get $i) (local.get $k)
        (select (f32.const 4) (f32.const -4) (i32.eq (local.get $k) (local.get $ell))) (f32.const 1))
      (call $set_coeff (global.get $P_HPOST) (global.get $M_A_POST) (global.get $M_B_POST) (local.get $i) (local.get $k)
        (select (f32.const 0) (f32.const -4) (i32.eq (local.get $k) (local.get $ell))) (f32.const 2))
      (br_if $lanes_ (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $lanes))))
    (local.set $k (i32.const 0))
    (loop $res  ;; M_rc = a_res[i] phi + b_res[i, r, c]
      (local.set $v (f32.load (i32.add (i32.load (global.get $P_ROUTE)) (i32.shl (local.get $k) (i32.const 2)))))
      (f32.store (i32.add (i32.load (global.get $P_ROUTE)) (i32.shl (local.get $k) (i32.const 2)))
        (f32.add (f32.mul (f32.load (i32.add (call $fdata (call $r_mhc (global.get $M_A_RES))) (i32.shl (local.get $i) (i32.const 2)))) (local.get $v))
                 (f32.load (i32.add (call $fdata (call $r_mhc (global.get $M_B_RES)))
                                    (i32.shl (i32.add (i32.mul (local.get $ll) (local.get $i)) (local.get $k)) (i32.const 2))))))
      (br_if $res (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $ll))))
    (call $sinkhorn (i32.load (global.get $P_ROUTE)) (local.get $lanes)))

  ;; field[k] = mul x sigmoid(a[i] field[k] + b[i, k] + off), with a = mHC record ra, b = record rb.
  (func $set_coeff (param $field i32) (param $ra i32) (param $rb i32) (param $i i32) (param $k i32) (param $off f32) (param $mul f32)
    (local $p i32)
    (local.set $p (i32.add (i32.load (local.get $field)) (i32.shl (local.get $k) (i32.const 2))))
    (f32.store (local.get $p) (f32.mul (local.get $mul) (call $sigmoid (f32.add (f32.add
      (f32.mul (f32.load (i32.add (call $fdata (call $r_mhc (local.get $ra))) (i32.shl (local.get $i) (i32.const 2)))) (f32.load (local.get $p)))
      (f32.load (i32.add (call $fdata (call $r_mhc (local.get $rb)))
                         (i32.shl (i32.add (i32.mul (local.get $i) (call $g (global.get $G_LANES))) (local.get $k)) (i32.const 2)))))
      (local.get $off))))))

  ;; 4c, 4g: u = sum_k hpre_k X_k; b = u, plus alpha v'_p at an engram site layer.
  (func $read_lanes (param $i i32)
    (local $d i32) (local $k i32) (local $u i32) (local $s i32) (local $kp i32) (local $iu f32) (local $ik f32)
    (local $dot f32) (local $c i32) (local $alpha f32)
    (local.set $d (call $g (global.get $G_D)))
    (local.set $u (i32.load (global.get $P_U)))
    (call $zero (local.get $u) (i32.shl (local.get $d) (i32.const 2)))
    (loop $lanes
      (call $axpy (local.get $u) (f32.load (i32.add (i32.load (global.get $P_HPRE)) (i32.shl (local.get $k) (i32.const 2))))
        (i32.add (i32.load (global.get $P_X)) (i32.shl (i32.mul (local.get $k) (local.get $d)) (i32.const 2))) (local.get $d))
      (br_if $lanes (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (call $g (global.get $G_LANES)))))
    (memory.copy (i32.load (global.get $P_B)) (local.get $u) (i32.shl (local.get $d) (i32.const 2)))
    (local.set $s (i32.const 0))
    (loop $sites
      (if (i32.lt_u (local.get $s) (call $g (global.get $G_NSITE)))
        (then
          (if (i32.eq (i32.load (i32.add (global.get $G_SITE) (i32.shl (local.get $s) (i32.const 2)))) (local.get $i))
            (then
              (local.set $kp (i32.add (i32.load (global.get $P_EK)) (i32.shl (i32.mul (local.get $s) (local.get $d)) (i32.const 2))))
              (local.set $iu (call $inv_rms (local.get $u) (local.get $d)))
              (local.set $ik (call $inv_rms (local.get $kp) (local.get $d)))
              (local.set $c (i32.const 0))
              (loop $dots
                (local.set $dot (f32.add (local.get $dot) (f32.mul
                  (f32.mul (f32.load (i32.add (local.get $u) (local.get $c))) (local.get $iu))
                  (f32.mul (f32.load (i32.add (local.get $kp) (local.get $c))) (local.get $ik)))))
                (br_if $dots (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 4))) (i32.shl (local.get $d) (i32.const 2)))))
              (local.set $alpha (call $sigmoid (f32.div (local.get $dot) (f32.load (global.get $SQRTD)))))
              (call $axpy (i32.load (global.get $P_B)) (local.get $alpha)
                (i32.add (i32.load (global.get $P_EV)) (i32.shl (i32.mul (local.get $s) (local.get $d)) (i32.const 2))) (local.get $d))))
          (local.set $s (i32.add (local.get $s) (i32.const 1)))
          (br $sites)))))

  ;; 4i-j: y = out - u; X_r <- sum_c P_rc X_c + hpost_r y (into NEWX, then the two swap).
  (func $write_lanes
    (local $d i32) (local $lanes i32) (local $r i32) (local $c i32) (local $nr i32) (local $t i32)
    (local.set $d (call $g (global.get $G_D)))
    (local.set $lanes (call $g (global.get $G_LANES)))
    (call $axpy (i32.load (global.get $P_Y)) (f32.const -1) (i32.load (global.get $P_U)) (local.get $d))
    (loop $rows
      (local.set $nr (i32.add (i32.load (global.get $P_NEWX)) (i32.shl (i32.mul (local.get $r) (local.get $d)) (i32.const 2))))
      (call $zero (local.get $nr) (i32.shl (local.get $d) (i32.const 2)))
      (local.set $c (i32.const 0))
      (loop $cols
        (call $axpy (local.get $nr)
          (f32.load (i32.add (i32.load (global.get $P_ROUTE)) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $lanes)) (local.get $c)) (i32.const 2))))
          (i32.add (i32.load (global.get $P_X)) (i32.shl (i32.mul (local.get $c) (local.get $d)) (i32.const 2))) (local.get $d))
        (br_if $cols (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (local.get $lanes))))
      (call $axpy (local.get $nr) (f32.load (i32.add (i32.load (global.get $P_HPOST)) (i32.shl (local.get $r) (i32.const 2))))
        (i32.load (global.get $P_Y)) (local.get $d))
      (br_if $rows (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $lanes))))
    (local.set $t (i32.load (global.get $P_X)))
    (i32.store (global.get $P_X) (i32.load (global.get $P_NEWX)))
    (i32.store (global.get $P_NEWX) (local.get $t)))

  ;; ZCRMS per head of `heads` heads at x with the shared scale s, then RoPE rotate-half.
  (func $norm_rotate (param $x i32) (param $heads i32) (param $s i32)
    (local $hd i32) (local $half i32) (local $j i32) (local $m i32) (local $p i32) (local $lo f32) (local $hi f32)
    (local $c f32) (local $sn f32)
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $half (i32.shr_u (local.get $hd) (i32.const 1)))
    (loop $heads_
      (local.set $p (i32.add (local.get $x) (i32.shl (i32.mul (local.get $j) (local.get $hd)) (i32.const 2))))
      (call $zcrms (local.get $p) (local.get $s) (local.get $hd) (local.get $p))
      (local.set $m (i32.const 0))
      (loop $pairs
        (local.set $lo (f32.load (i32.add (local.get $p) (i32.shl (local.get $m) (i32.const 2)))))
        (local.set $hi (f32.load (i32.add (local.get $p) (i32.shl (i32.add (local.get $m) (local.get $half)) (i32.const 2)))))
        (local.set $c (f32.load (i32.add (i32.load (global.get $P_RCOS)) (i32.shl (local.get $m) (i32.const 2)))))
        (local.set $sn (f32.load (i32.add (i32.load (global.get $P_RSIN)) (i32.shl (local.get $m) (i32.const 2)))))
        (f32.store (i32.add (local.get $p) (i32.shl (local.get $m) (i32.const 2)))
          (f32.sub (f32.mul (local.get $lo) (local.get $c)) (f32.mul (local.get $hi) (local.get $sn))))
        (f32.store (i32.add (local.get $p) (i32.shl (i32.add (local.get $m) (local.get $half)) (i32.const 2)))
          (f32.add (f32.mul (local.get $hi) (local.get $c)) (f32.mul (local.get $lo) (local.get $sn))))
        (br_if $pairs (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 1))) (local.get $half))))
      (br_if $heads_ (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (local.get $heads)))))

  ;; RoPE cos and sin at position p: angle = f32(p) x freq_m in f32, cos/sin in f64, rounded.
  (func $rope_at (param $p i32)
    (local $m i32) (local $a f64)
    (loop $l
      (local.set $a (f64.promote_f32 (f32.mul (f32.convert_i32_u (local.get $p))
        (f32.load (i32.add (i32.load (global.get $P_RFREQ)) (i32.shl (local.get $m) (i32.const 2)))))))
      (f32.store (i32.add (i32.load (global.get $P_RCOS)) (i32.shl (local.get $m) (i32.const 2))) (f32.demote_f64 (call $cos64 (local.get $a))))
      (f32.store (i32.add (i32.load (global.get $P_RSIN)) (i32.shl (local.get $m) (i32.const 2))) (f32.demote_f64 (call $sin64 (local.get $a))))
      (br_if $l (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 1))) (i32.shr_u (call $g (global.get $G_HD)) (i32.const 1))))))

  ;; Physical KV slot of logical position pos: sinks first, then the window ring.
  (func $phys_slot (param $pos i32) (result i32)
    (local $sink i32) (local $win i32)
    (local.set $sink (i32.load (global.get $SINK)))
    (local.set $win (call $g (global.get $G_KVWIN)))
    (if (result i32) (i32.or (i32.lt_u (local.get $pos) (local.get $sink)) (i32.eqz (local.get $win)))
      (then (local.get $pos))
      (else (i32.add (local.get $sink) (i32.rem_u (i32.sub (local.get $pos) (local.get $sink)) (local.get $win))))))

  ;; Quantises n values at src per block of 32 into int8 (value k of block b at dq + (32 b + k) step)
  ;; with the f32 block scales at ds + b sstep (keys are stored transposed, values row by row):
  ;; numerics.md's quantizeBlockInt8, four values at a time ($q8x4 = $q8 lane by lane; the maximum of
  ;; |x| is the same in any order). Driver only (QTMP holds a transposed block on its way).
  (func $kv_store (param $src i32) (param $n i32) (param $dq i32) (param $step i32) (param $ds i32) (param $sstep i32)
    (local $b i32) (local $k i32) (local $amax f32) (local $inv v128) (local $p i32) (local $out i32)
    (loop $blocks
      (local.set $p (i32.add (local.get $src) (i32.shl (local.get $b) (i32.const 7))))
      (local.set $amax (call $amax32 (local.get $p)))
      (local.set $inv (f32x4.splat (f32.div (f32.const 127) (local.get $amax))))
      ;; the 32 int8 values in order: straight into a value row, through QTMP into a key column
      (local.set $out (select (i32.add (local.get $dq) (i32.shl (local.get $b) (i32.const 5))) (global.get $QTMP)
                              (i32.eq (local.get $step) (i32.const 1))))
      (v128.store (local.get $out) (call $q8x16 (local.get $p) (local.get $inv) (local.get $amax)))
      (v128.store offset=16 (local.get $out) (call $q8x16 (i32.add (local.get $p) (i32.const 64)) (local.get $inv) (local.get $amax)))
      (if (i32.ne (local.get $step) (i32.const 1))
        (then
          (local.set $k (i32.const 0))
          (loop $column
            (i32.store8 (i32.add (local.get $dq) (i32.mul (i32.add (i32.shl (local.get $b) (i32.const 5)) (local.get $k)) (local.get $step)))
                        (i32.load8_u (i32.add (global.get $QTMP) (local.get $k))))
            (br_if $column (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.const 32))))))
      (f32.store (i32.add (local.get $ds) (i32.mul (local.get $b) (local.get $sstep)))
        (if (result f32) (f32.eq (local.get $amax) (f32.const 0)) (then (f32.const 0)) (else (f32.div (local.get $amax) (f32.const 127)))))
      (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (i32.shr_u (local.get $n) (i32.const 5))))))

  ;; max |x| over the 32 f32 at p, from 0, skipping NaN as std::max(amax, |x|) does (pmax keeps the
  ;; accumulator when the new value is NaN): quantizeBlockInt8's amax.
  (func $amax32 (param $p i32) (result f32)
    (local $m v128) (local $k i32)
    (loop $max
      (local.set $m (f32x4.pmax (local.get $m) (f32x4.abs (v128.load (i32.add (local.get $p) (local.get $k))))))
      (br_if $max (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 16))) (i32.const 128))))
    (call $max4 (local.get $m)))

  ;; The largest of four f32 lanes (none NaN).
  (func $max4 (param $m v128) (result f32)
    (f32.max (f32.max (f32x4.extract_lane 0 (local.get $m)) (f32x4.extract_lane 1 (local.get $m)))
             (f32.max (f32x4.extract_lane 2 (local.get $m)) (f32x4.extract_lane 3 (local.get $m)))))

  ;; The 16 f32 at p as int8 (x inv, $q8x4), in order; all 0 when amax is 0.
  (func $q8x16 (param $p i32) (param $inv v128) (param $amax f32) (result v128)
    (if (f32.eq (local.get $amax) (f32.const 0)) (then (return (v128.const i32x4 0 0 0 0))))
    (i8x16.narrow_i16x8_s
      (i16x8.narrow_i32x4_s (call $q8x4 (v128.load (local.get $p)) (local.get $inv))
                            (call $q8x4 (v128.load offset=16 (local.get $p)) (local.get $inv)))
      (i16x8.narrow_i32x4_s (call $q8x4 (v128.load offset=32 (local.get $p)) (local.get $inv))
                            (call $q8x4 (v128.load offset=48 (local.get $p)) (local.get $inv)))))

  ;; 4h, attention half: b -> x1 = b + sigmoid(attn_gate) ZCRMS(Wout(o * sigmoid(Wgate h)), post_norm),
  ;; in four parts that a batched prefill runs token by token around its batched products.
  (func $attention (param $i i32) (param $p i32)
    (call $attn_norm (local.get $i))
    (call $prepare (call $r_layer (local.get $i) (global.get $L_Q)) (i32.load (global.get $P_H)))
    (call $fuse (i32.const 0) (call $r_layer (local.get $i) (global.get $L_Q)) (i32.load (global.get $P_Q)))
    (call $fuse (i32.const 1) (call $r_layer (local.get $i) (global.get $L_K)) (i32.load (global.get $P_K)))
    (call $fuse (i32.const 2) (call $r_layer (local.get $i) (global.get $L_V)) (i32.load (global.get $P_V)))
    (call $fuse (i32.const 3) (call $r_layer (local.get $i) (global.get $L_GATE)) (i32.load (global.get $P_GATE)))
    (call $fused_products (i32.const 4))
    (call $attn_heads (local.get $i) (local.get $p))
    (call $prepare (call $r_layer (local.get $i) (global.get $L_OUT)) (i32.load (global.get $P_O)))
    (call $product (call $r_layer (local.get $i) (global.get $L_OUT)) (i32.load (global.get $P_A)) (i32.const 0) (call $g (global.get $G_D)))
    (call $attn_residual (local.get $i)))

  ;; h = ZCRMS(b, norm_in): the input of the q, k, v and gate products.
  (func $attn_norm (param $i i32)
    (call $zcrms (i32.load (global.get $P_B)) (call $fdata (call $r_layer (local.get $i) (global.get $L_NORM_IN)))
                 (call $g (global.get $G_D)) (i32.load (global.get $P_H))))

  ;; From q, k, v and gate at position p: q and k normed and rotated, k and v cached, every query
  ;; head's attention into o, then o <- o * sigmoid(gate).
  (func $attn_heads (param $i i32) (param $p i32)
    (local $H i32) (local $KV i32) (local $hd i32) (local $j i32) (local $slot i32) (local $row i32)
    (local $qd i32) (local $c i32) (local $g i32) (local $slots i32) (local $items i32)
    (local.set $H (call $g (global.get $G_H)))
    (local.set $KV (call $g (global.get $G_KV)))
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $qd (i32.mul (local.get $H) (local.get $hd)))
    (call $norm_rotate (i32.load (global.get $P_Q)) (local.get $H) (call $fdata (call $r_layer (local.get $i) (global.get $L_Q_NORM))))
    (call $norm_rotate (i32.load (global.get $P_K)) (local.get $KV) (call $fdata (call $r_layer (local.get $i) (global.get $L_K_NORM))))
    ;; cache the normed, rotated k (transposed: value c of slot s at c x slots + s) and the raw v
    (local.set $slot (call $phys_slot (local.get $p)))
    (local.set $slots (i32.load (global.get $KV_SLOTS)))
    (loop $kvh
      (local.set $row (i32.add (i32.mul (local.get $i) (local.get $KV)) (local.get $j)))  ;; this layer's KV head j
      (call $kv_store (i32.add (i32.load (global.get $P_K)) (i32.shl (i32.mul (local.get $j) (local.get $hd)) (i32.const 2))) (local.get $hd)
        (i32.add (i32.add (i32.load (global.get $P_KQ)) (i32.mul (i32.mul (local.get $row) (local.get $hd)) (local.get $slots))) (local.get $slot))
        (local.get $slots)
        (i32.add (i32.load (global.get $P_KS)) (i32.shl (i32.add (i32.mul (i32.mul (local.get $row) (i32.shr_u (local.get $hd) (i32.const 5))) (local.get $slots)) (local.get $slot)) (i32.const 2)))
        (i32.shl (local.get $slots) (i32.const 2)))
      (local.set $row (i32.add (i32.mul (local.get $row) (local.get $slots)) (local.get $slot)))
      (call $kv_store (i32.add (i32.load (global.get $P_V)) (i32.shl (i32.mul (local.get $j) (local.get $hd)) (i32.const 2))) (local.get $hd)
        (i32.add (i32.load (global.get $P_VQ)) (i32.mul (local.get $row) (local.get $hd))) (i32.const 1)
        (i32.add (i32.load (global.get $P_VS)) (i32.shl (i32.mul (local.get $row) (i32.shr_u (local.get $hd) (i32.const 5))) (i32.const 2)))
        (i32.const 4))
      (br_if $kvh (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (local.get $KV))))
    (call $key_range (local.get $i) (local.get $p))
    ;; query heads in pairs that share their keys' loads when every KV head has an even number of
    ;; them and a pair for every thread; else one query head per item
    (local.set $items (local.get $H))
    (if (i32.and (i32.eqz (i32.and (i32.div_u (local.get $H) (local.get $KV)) (i32.const 1)))
                 (i32.le_u (i32.load (global.get $THREADS)) (i32.shr_u (local.get $H) (i32.const 1))))
      (then (local.set $items (i32.shr_u (local.get $H) (i32.const 1)))))
    (i32.store (i32.add (global.get $ARGS) (global.get $ATT_PAIRED)) (i32.ne (local.get $items) (local.get $H)))
    (if (i32.and (i32.gt_u (i32.load (global.get $THREADS)) (i32.const 1)) (i32.gt_u (local.get $items) (i32.const 1)))
      (then (call $run_job (global.get $JOB_ATTENTION) (local.get $items) (i32.const 1)))
      (else (call $job_attention (i32.const 0) (local.get $items) (i32.const 0))))
    (loop $gate  ;; four at a time (qd is a multiple of 32)
      (local.set $g (i32.add (i32.load (global.get $P_O)) (i32.shl (local.get $c) (i32.const 2))))
      (v128.store (local.get $g) (f32x4.mul (v128.load (local.get $g))
        (call $sigmoid4 (v128.load (i32.add (i32.load (global.get $P_GATE)) (i32.shl (local.get $c) (i32.const 2)))))))
      (br_if $gate (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 4))) (local.get $qd)))))

  ;; From a = Wout o: a <- ZCRMS(a, post_norm); x1 = b + sigmoid(attn_gate) a.
  (func $attn_residual (param $i i32)
    (local $d i32)
    (local.set $d (call $g (global.get $G_D)))
    (call $zcrms (i32.load (global.get $P_A)) (call $fdata (call $r_layer (local.get $i) (global.get $L_POST_NORM))) (local.get $d) (i32.load (global.get $P_A)))
    (memory.copy (i32.load (global.get $P_X1)) (i32.load (global.get $P_B)) (i32.shl (local.get $d) (i32.const 2)))
    (call $axpy (i32.load (global.get $P_X1))
      (call $sigmoid (f32.load (call $fdata (call $r_layer (local.get $i) (global.get $L_ATTN_GATE)))))
      (i32.load (global.get $P_A)) (local.get $d)))

  ;; The keys position p attends, as job arguments for layer i (ARGS, ATT_*: layer, sinkEnd,
  ;; windowBegin, keys): the sinks [0, sinkEnd) and the window [windowBegin, p].
  (func $key_range (param $i i32) (param $p i32)
    (local $end i32) (local $sink i32) (local $win i32) (local $sinkEnd i32) (local $wb i32)
    (local.set $end (i32.add (local.get $p) (i32.const 1)))
    (local.set $sink (i32.load (global.get $SINK)))
    (local.set $win (call $g (global.get $G_KVWIN)))
    (local.set $sinkEnd (select (local.get $sink) (local.get $end) (i32.lt_u (local.get $sink) (local.get $end))))
    (if (i32.eqz (local.get $win))
      (then (local.set $wb (local.get $sinkEnd)))
      (else
        (local.set $wb (select (i32.sub (local.get $end) (local.get $win)) (i32.const 0) (i32.gt_u (local.get $end) (local.get $win))))
        (if (i32.lt_u (local.get $wb) (local.get $sink)) (then (local.set $wb (local.get $sink))))
        (if (i32.gt_u (local.get $wb) (local.get $end)) (then (local.set $wb (local.get $end))))))
    (i32.store (i32.add (global.get $ARGS) (global.get $ATT_LAYER)) (local.get $i))
    (i32.store (i32.add (global.get $ARGS) (global.get $ATT_SINK_END)) (local.get $sinkEnd))
    (i32.store (i32.add (global.get $ARGS) (global.get $ATT_WINDOW_BEGIN)) (local.get $wb))
    (i32.store (i32.add (global.get $ARGS) (global.get $ATT_KEYS)) (i32.add (local.get $sinkEnd) (i32.sub (local.get $end) (local.get $wb)))))

  ;; JOB_ATTENTION: attention of items [b, e) (ARGS, ATT_*: layer, sinkEnd, windowBegin, keys, paired):
  ;; query head b, or with ATT_PAIRED the query heads 2b and 2b + 1.
  (func $job_attention (param $b i32) (param $e i32) (param $slot i32)
    (loop $items
      (if (i32.lt_u (local.get $b) (local.get $e))
        (then
          (if (i32.load (i32.add (global.get $ARGS) (global.get $ATT_PAIRED)))
            (then (call $attend_pair (i32.shl (local.get $b) (i32.const 1))))
            (else (call $attend (local.get $b))))
          (local.set $b (i32.add (local.get $b) (i32.const 1)))
          (br $items)))))

  ;; Softmax attention of query head j over the cached keys (int8 K and V, per-32 scales). The scores
  ;; are computed by physical slot, eight slots at a time (each still its own sequential sum, as in
  ;; the reference), then taken in logical key order for the softmax and the value sum.
  (func $attend (param $j i32)
    (local $i i32) (local $hd i32) (local $KV i32) (local $q i32) (local $sp i32) (local $sc i32) (local $head i32)
    (local $count i32) (local $sinkEnd i32) (local $slots i32) (local $b i32) (local $nb i32)
    (local.set $i (i32.load (i32.add (global.get $ARGS) (global.get $ATT_LAYER))))
    (local.set $sinkEnd (i32.load (i32.add (global.get $ARGS) (global.get $ATT_SINK_END))))
    (local.set $count (i32.load (i32.add (global.get $ARGS) (global.get $ATT_KEYS))))
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $nb (i32.shr_u (local.get $hd) (i32.const 5)))
    (local.set $KV (call $g (global.get $G_KV)))
    (local.set $slots (i32.load (global.get $KV_SLOTS)))
    (local.set $head (i32.add (i32.mul (local.get $i) (local.get $KV))
                              (i32.div_u (local.get $j) (i32.div_u (call $g (global.get $G_H)) (local.get $KV)))))
    (local.set $q (i32.add (i32.load (global.get $P_Q)) (i32.shl (i32.mul (local.get $j) (local.get $hd)) (i32.const 2))))
    (local.set $sp (i32.add (i32.load (global.get $P_SCORES)) (i32.shl (i32.mul (local.get $j) (i32.shl (i32.add (local.get $slots) (i32.const 8)) (i32.const 1))) (i32.const 2))))
    (local.set $sc (i32.add (local.get $sp) (i32.shl (i32.add (local.get $slots) (i32.const 8)) (i32.const 2))))
    ;; scores by slot: the sinks [0, sinkEnd), then the window's keys, whose slots are [sinkEnd, count)
    ;; without a window, else [sink, sink + count - sinkEnd) (all of the ring once it is full)
    (call $score_slots (local.get $q) (local.get $head) (i32.const 0) (local.get $sinkEnd) (local.get $sp))
    (if (i32.eqz (call $g (global.get $G_KVWIN)))
      (then (call $score_slots (local.get $q) (local.get $head) (local.get $sinkEnd) (local.get $count) (local.get $sp)))
      (else (call $score_slots (local.get $q) (local.get $head) (i32.load (global.get $SINK))
              (i32.add (i32.load (global.get $SINK)) (i32.sub (local.get $count) (local.get $sinkEnd))) (local.get $sp))))
    (call $key_weights (local.get $sp) (local.get $sc))
    ;; o_i = sum over the keys, in order, of w_t x vscale x v_i: one block of 32 values at a time
    (loop $blocks
      (call $value_block (i32.add (i32.load (global.get $P_O)) (i32.shl (i32.add (i32.mul (local.get $j) (local.get $hd))
                                                                                  (i32.shl (local.get $b) (i32.const 5))) (i32.const 2)))
        (local.get $sc) (local.get $head) (local.get $b))
      (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb)))))

  ;; $attend for the query heads j and j + 1 (j even), which read the same KV head: each key's int8
  ;; values are loaded and widened once for both; every score, weight and output is $attend's.
  (func $attend_pair (param $j i32)
    (local $hd i32) (local $KV i32) (local $q i32) (local $sp i32) (local $head i32) (local $count i32)
    (local $sinkEnd i32) (local $slots i32) (local $per i32) (local $h i32) (local $o i32)
    (local.set $sinkEnd (i32.load (i32.add (global.get $ARGS) (global.get $ATT_SINK_END))))
    (local.set $count (i32.load (i32.add (global.get $ARGS) (global.get $ATT_KEYS))))
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $KV (call $g (global.get $G_KV)))
    (local.set $slots (i32.load (global.get $KV_SLOTS)))
    (local.set $head (i32.add (i32.mul (i32.load (i32.add (global.get $ARGS) (global.get $ATT_LAYER))) (local.get $KV))
                              (i32.div_u (local.get $j) (i32.div_u (call $g (global.get $G_H)) (local.get $KV)))))
    (local.set $q (i32.add (i32.load (global.get $P_Q)) (i32.shl (i32.mul (local.get $j) (local.get $hd)) (i32.const 2))))
    (local.set $per (i32.shl (i32.add (local.get $slots) (i32.const 8)) (i32.const 2)))  ;; bytes of one score row
    ;; head j's scratch: scores by slot at sp, weights by key at sp + per; head j + 1's at sp + 2 per
    (local.set $sp (i32.add (i32.load (global.get $P_SCORES)) (i32.mul (local.get $j) (i32.shl (local.get $per) (i32.const 1)))))
    (call $score_slots2 (local.get $q) (local.get $head) (i32.const 0) (local.get $sinkEnd) (local.get $sp) (local.get $hd) (i32.shl (local.get $per) (i32.const 1)))
    (if (i32.eqz (call $g (global.get $G_KVWIN)))
      (then (call $score_slots2 (local.get $q) (local.get $head) (local.get $sinkEnd) (local.get $count) (local.get $sp) (local.get $hd) (i32.shl (local.get $per) (i32.const 1))))
      (else (call $score_slots2 (local.get $q) (local.get $head) (i32.load (global.get $SINK))
              (i32.add (i32.load (global.get $SINK)) (i32.sub (local.get $count) (local.get $sinkEnd))) (local.get $sp) (local.get $hd) (i32.shl (local.get $per) (i32.const 1)))))
    (call $key_weights (local.get $sp) (i32.add (local.get $sp) (local.get $per)))
    (call $key_weights (i32.add (local.get $sp) (i32.shl (local.get $per) (i32.const 1))) (i32.add (local.get $sp) (i32.mul (local.get $per) (i32.const 3))))
    (local.set $o (i32.add (i32.load (global.get $P_O)) (i32.shl (i32.mul (local.get $j) (local.get $hd)) (i32.const 2))))
    (loop $halves  ;; 16 values of both heads at a time
      (call $value_half2 (local.get $o) (i32.add (local.get $sp) (local.get $per)) (i32.add (local.get $sp) (i32.mul (local.get $per) (i32.const 3)))
                         (local.get $head) (local.get $h) (i32.shl (local.get $hd) (i32.const 2)))
      (br_if $halves (i32.lt_u (local.tee $h (i32.add (local.get $h) (i32.const 1))) (i32.shr_u (local.get $hd) (i32.const 4))))))

  ;; $score_slots for two queries at once, at q and q + 4 hd (hd = qoff floats apart), into sp and
  ;; sp + spoff: the same sums, each key value widened once for both.
  (func $score_slots2 (param $q i32) (param $head i32) (param $from i32) (param $to i32) (param $sp i32) (param $qoff i32) (param $spoff i32)
    (local $hd i32) (local $slots i32) (local $kb i32) (local $ksb i32) (local $b i32) (local $c i32) (local $nb i32)
    (local $k v128) (local $ka v128) (local $kc v128) (local $q0 v128) (local $q1 v128) (local $root v128) (local $kp i32) (local $ks i32) (local $qc i32)
    (local $pa v128) (local $pb v128) (local $pc v128) (local $pd v128) (local $da v128) (local $db v128) (local $dc v128) (local $dd v128)
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $nb (i32.shr_u (local.get $hd) (i32.const 5)))
    (local.set $slots (i32.load (global.get $KV_SLOTS)))
    (local.set $kb (i32.add (i32.load (global.get $P_KQ)) (i32.mul (i32.mul (local.get $head) (local.get $hd)) (local.get $slots))))
    (local.set $ksb (i32.add (i32.load (global.get $P_KS)) (i32.shl (i32.mul (i32.mul (local.get $head) (local.get $nb)) (local.get $slots)) (i32.const 2))))
    (local.set $root (f32x4.splat (f32.sqrt (f32.convert_i32_u (local.get $hd)))))
    (local.set $qoff (i32.shl (local.get $qoff) (i32.const 2)))
    (block $done (loop $eights
      (br_if $done (i32.ge_u (local.get $from) (local.get $to)))
      (local.set $da (v128.const i32x4 0 0 0 0)) (local.set $db (v128.const i32x4 0 0 0 0))
      (local.set $dc (v128.const i32x4 0 0 0 0)) (local.set $dd (v128.const i32x4 0 0 0 0))
      (local.set $b (i32.const 0))
      (loop $blocks
        (local.set $pa (v128.const i32x4 0 0 0 0)) (local.set $pb (v128.const i32x4 0 0 0 0))
        (local.set $pc (v128.const i32x4 0 0 0 0)) (local.set $pd (v128.const i32x4 0 0 0 0))
        (local.set $kp (i32.add (local.get $kb) (i32.add (i32.mul (i32.shl (local.get $b) (i32.const 5)) (local.get $slots)) (local.get $from))))
        (local.set $qc (i32.add (local.get $q) (i32.shl (local.get $b) (i32.const 7))))
        (local.set $c (i32.const 0))
        (loop $cs
          (local.set $k (i16x8.extend_low_i8x16_s (v128.load64_zero (local.get $kp))))
          (local.set $ka (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $k))))
          (local.set $kc (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $k))))
          (local.set $q0 (v128.load32_splat (local.get $qc)))
          (local.set $q1 (v128.load32_splat (i32.add (local.get $qc) (local.get $qoff))))
          (local.set $pa (f32x4.add (local.get $pa) (f32x4.mul (local.get $q0) (local.get $ka))))
          (local.set $pb (f32x4.add (local.get $pb) (f32x4.mul (local.get $q0) (local.get $kc))))
          (local.set $pc (f32x4.add (local.get $pc) (f32x4.mul (local.get $q1) (local.get $ka))))
          (local.set $pd (f32x4.add (local.get $pd) (f32x4.mul (local.get $q1) (local.get $kc))))
          (local.set $kp (i32.add (local.get $kp) (local.get $slots)))
          (local.set $qc (i32.add (local.get $qc) (i32.const 4)))
          (br_if $cs (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (i32.const 32))))
        (local.set $ks (i32.add (local.get $ksb) (i32.shl (i32.add (i32.mul (local.get $b) (local.get $slots)) (local.get $from)) (i32.const 2))))
        (local.set $da (f32x4.add (local.get $da) (f32x4.mul (v128.load (local.get $ks)) (local.get $pa))))
        (local.set $db (f32x4.add (local.get $db) (f32x4.mul (v128.load offset=16 (local.get $ks)) (local.get $pb))))
        (local.set $dc (f32x4.add (local.get $dc) (f32x4.mul (v128.load (local.get $ks)) (local.get $pc))))
        (local.set $dd (f32x4.add (local.get $dd) (f32x4.mul (v128.load offset=16 (local.get $ks)) (local.get $pd))))
        (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
      (local.set $ks (i32.add (local.get $sp) (i32.shl (local.get $from) (i32.const 2))))
      (v128.store (local.get $ks) (f32x4.div (local.get $da) (local.get $root)))
      (v128.store offset=16 (local.get $ks) (f32x4.div (local.get $db) (local.get $root)))
      (v128.store (i32.add (local.get $ks) (local.get $spoff)) (f32x4.div (local.get $dc) (local.get $root)))
      (v128.store offset=16 (i32.add (local.get $ks) (local.get $spoff)) (f32x4.div (local.get $dd) (local.get $root)))
      (local.set $from (i32.add (local.get $from) (i32.const 8)))
      (br $eights))))

  ;; Values 16 h .. 16 h + 15 of two query heads' outputs, at o and o + ooff, from the weights at sc0
  ;; and sc1 and KV head `head`'s value rows: each as $value_block makes it (each element's additions
  ;; in key order), the int8 values loaded and widened once for both heads.
  (func $value_half2 (param $o i32) (param $sc0 i32) (param $sc1 i32) (param $head i32) (param $h i32) (param $ooff i32)
    (local $count i32) (local $sinkEnd i32) (local $t i32) (local $slot i32) (local $wrap i32) (local $sink i32)
    (local $hd i32) (local $nb i32) (local $vq i32) (local $vs f32) (local $row i32) (local $first i32)
    (local $w0 v128) (local $w1 v128) (local $x v128) (local $f0 v128) (local $f1 v128) (local $f2 v128) (local $f3 v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local.set $sinkEnd (i32.load (i32.add (global.get $ARGS) (global.get $ATT_SINK_END))))
    (local.set $count (i32.load (i32.add (global.get $ARGS) (global.get $ATT_KEYS))))
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $nb (i32.shr_u (local.get $hd) (i32.const 5)))
    (local.set $sink (i32.load (global.get $SINK)))
    (call $window_run (local.get $sinkEnd))
    (local.set $wrap)
    (local.set $first)
    (local.set $row (i32.mul (local.get $head) (i32.load (global.get $KV_SLOTS))))
    (loop $keys
      (local.set $slot
        (if (result i32) (i32.lt_u (local.get $t) (local.get $sinkEnd)) (then (local.get $t))
          (else (if (result i32) (i32.eq (local.get $t) (local.get $sinkEnd)) (then (local.get $first))
            (else (select (local.get $sink) (i32.add (local.get $slot) (i32.const 1))
                          (i32.eq (i32.add (local.get $slot) (i32.const 1)) (local.get $wrap))))))))
      (local.set $vq (i32.add (i32.load (global.get $P_VQ))
        (i32.add (i32.mul (i32.add (local.get $row) (local.get $slot)) (local.get $hd)) (i32.shl (local.get $h) (i32.const 4)))))
      (local.set $vs (f32.load (i32.add (i32.load (global.get $P_VS))
        (i32.shl (i32.add (i32.mul (i32.add (local.get $row) (local.get $slot)) (local.get $nb)) (i32.shr_u (local.get $h) (i32.const 1))) (i32.const 2)))))
      (local.set $w0 (f32x4.splat (f32.mul (f32.load (i32.add (local.get $sc0) (i32.shl (local.get $t) (i32.const 2)))) (local.get $vs))))
      (local.set $w1 (f32x4.splat (f32.mul (f32.load (i32.add (local.get $sc1) (i32.shl (local.get $t) (i32.const 2)))) (local.get $vs))))
      (local.set $x (v128.load (local.get $vq)))
      (local.set $f0 (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (i16x8.extend_low_i8x16_s (local.get $x)))))
      (local.set $f1 (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (i16x8.extend_low_i8x16_s (local.get $x)))))
      (local.set $f2 (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (i16x8.extend_high_i8x16_s (local.get $x)))))
      (local.set $f3 (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (i16x8.extend_high_i8x16_s (local.get $x)))))
      (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $w0) (local.get $f0))))
      (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $w0) (local.get $f1))))
      (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $w0) (local.get $f2))))
      (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $w0) (local.get $f3))))
      (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $w1) (local.get $f0))))
      (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $w1) (local.get $f1))))
      (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $w1) (local.get $f2))))
      (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $w1) (local.get $f3))))
      (br_if $keys (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $count))))
    (local.set $o (i32.add (local.get $o) (i32.shl (local.get $h) (i32.const 6))))
    (call $store4 (local.get $o) (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3))
    (call $store4 (i32.add (local.get $o) (local.get $ooff)) (local.get $c0) (local.get $c1) (local.get $c2) (local.get $c3)))

  ;; Physical slot of attended key t, given that of key t - 1 (ignored for t <= sinkEnd). Without a
  ;; division: the window's keys are consecutive positions, whose slots run up by one and wrap from
  ;; sink + window back to sink (with no window, slot = position). The callers inline the wrap of
  ;; the window's run (the same rule) in their key loops.
  (func $next_key_slot (param $prev i32) (param $t i32) (param $sinkEnd i32) (param $wb i32) (result i32)
    (local $s i32) (local $win i32)
    (if (i32.le_u (local.get $t) (local.get $sinkEnd))
      (then (return (call $key_slot (local.get $t) (local.get $sinkEnd) (local.get $wb)))))
    (local.set $s (i32.add (local.get $prev) (i32.const 1)))
    (local.set $win (call $g (global.get $G_KVWIN)))
    (select (i32.load (global.get $SINK)) (local.get $s)
      (i32.and (i32.ne (local.get $win) (i32.const 0))
               (i32.eq (local.get $s) (i32.add (i32.load (global.get $SINK)) (local.get $win))))))

  ;; The window's run of attended keys (ARGS, ATT_*): its first slot, and the slot it wraps at to
  ;; `sink` (-1: never, without a window), for the key loops that walk the slots inline.
  (func $window_run (param $sinkEnd i32) (result i32 i32)
    (call $key_slot (local.get $sinkEnd) (local.get $sinkEnd) (i32.load (i32.add (global.get $ARGS) (global.get $ATT_WINDOW_BEGIN))))
    (select (i32.add (i32.load (global.get $SINK)) (call $g (global.get $G_KVWIN))) (i32.const -1)
            (call $g (global.get $G_KVWIN))))

  ;; Physical slot of attended key t: the sinks first, then positions from windowBegin.
  (func $key_slot (param $t i32) (param $sinkEnd i32) (param $wb i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $t) (local.get $sinkEnd)) (then (local.get $t))
      (else (call $phys_slot (i32.add (local.get $wb) (i32.sub (local.get $t) (local.get $sinkEnd)))))))

  ;; The softmax weights of the attended keys (ARGS, ATT_*), in logical key order, from the scores by
  ;; slot at sp: sc[t] = e^(s_t - max) / sum, with the maximum, the exponentials and their sum each
  ;; taken in key order as the reference does.
  (func $key_weights (param $sp i32) (param $sc i32)
    (local $count i32) (local $sinkEnd i32) (local $wb i32) (local $t i32) (local $slot i32)
    (local $mx f32) (local $s f32) (local $sum f32) (local $at i32)
    (local.set $sinkEnd (i32.load (i32.add (global.get $ARGS) (global.get $ATT_SINK_END))))
    (local.set $wb (i32.load (i32.add (global.get $ARGS) (global.get $ATT_WINDOW_BEGIN))))
    (local.set $count (i32.load (i32.add (global.get $ARGS) (global.get $ATT_KEYS))))
    (local.set $mx (f32.const -inf))
    (loop $keys
      (local.set $slot (call $next_key_slot (local.get $slot) (local.get $t) (local.get $sinkEnd) (local.get $wb)))
      (local.set $s (f32.load (i32.add (local.get $sp) (i32.shl (local.get $slot) (i32.const 2)))))
      (f32.store (i32.add (local.get $sc) (i32.shl (local.get $t) (i32.const 2))) (local.get $s))
      (if (f32.lt (local.get $mx) (local.get $s)) (then (local.set $mx (local.get $s))))
      (br_if $keys (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $count))))
    ;; e^(s - max) four keys at a time (up to three lanes past count land in the slack of 8 and are
    ;; never read), then their sum in key order, then the divisions four at a time
    (local.set $t (i32.const 0))
    (loop $exp
      (local.set $at (i32.add (local.get $sc) (i32.shl (local.get $t) (i32.const 2))))
      (v128.store (local.get $at) (call $expf4 (f32x4.sub (v128.load (local.get $at)) (f32x4.splat (local.get $mx)))))
      (br_if $exp (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 4))) (local.get $count))))
    (local.set $t (i32.const 0))
    (loop $sum
      (local.set $sum (f32.add (local.get $sum) (f32.load (i32.add (local.get $sc) (i32.shl (local.get $t) (i32.const 2))))))
      (br_if $sum (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $count))))
    (local.set $t (i32.const 0))
    (loop $div
      (local.set $at (i32.add (local.get $sc) (i32.shl (local.get $t) (i32.const 2))))
      (v128.store (local.get $at) (f32x4.div (v128.load (local.get $at)) (f32x4.splat (local.get $sum))))
      (br_if $div (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 4))) (local.get $count)))))

  ;; Block b of one query head's output, at o (32 f32): o_i = sum over the attended keys (ARGS,
  ;; ATT_*) in logical order of (w_t x vscale_t,b) x v_t,i, w_t = sc[t], from KV head `head`'s value
  ;; rows. The 32 sums stay in eight vectors from 0 to the last key (each lane the same f32 additions
  ;; in the same order as one row at a time into memory); slots as $next_key_slot, inlined.
  (func $value_block (param $o i32) (param $sc i32) (param $head i32) (param $b i32)
    (local $count i32) (local $sinkEnd i32) (local $t i32) (local $slot i32) (local $wrap i32) (local $sink i32)
    (local $hd i32) (local $nb i32) (local $vq i32) (local $vs i32) (local $row i32) (local $first i32)
    (local $wv v128) (local $x v128) (local $y v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128)
    (local.set $sinkEnd (i32.load (i32.add (global.get $ARGS) (global.get $ATT_SINK_END))))
    (local.set $count (i32.load (i32.add (global.get $ARGS) (global.get $ATT_KEYS))))
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $nb (i32.shr_u (local.get $hd) (i32.const 5)))
    (local.set $sink (i32.load (global.get $SINK)))
    ;; the window's first slot, and the slot its run wraps at (never, without a window)
    (call $window_run (local.get $sinkEnd))
    (local.set $wrap)
    (local.set $first)
    (local.set $row (i32.mul (local.get $head) (i32.load (global.get $KV_SLOTS))))
    (loop $keys
      (local.set $slot
        (if (result i32) (i32.lt_u (local.get $t) (local.get $sinkEnd)) (then (local.get $t))
          (else (if (result i32) (i32.eq (local.get $t) (local.get $sinkEnd)) (then (local.get $first))
            (else (select (local.get $sink) (i32.add (local.get $slot) (i32.const 1))
                          (i32.eq (i32.add (local.get $slot) (i32.const 1)) (local.get $wrap))))))))
      (local.set $vq (i32.add (i32.load (global.get $P_VQ))
        (i32.add (i32.mul (i32.add (local.get $row) (local.get $slot)) (local.get $hd)) (i32.shl (local.get $b) (i32.const 5)))))
      (local.set $vs (i32.add (i32.load (global.get $P_VS))
        (i32.shl (i32.add (i32.mul (i32.add (local.get $row) (local.get $slot)) (local.get $nb)) (local.get $b)) (i32.const 2))))
      (local.set $wv (f32x4.splat (f32.mul (f32.load (i32.add (local.get $sc) (i32.shl (local.get $t) (i32.const 2))))
                                           (f32.load (local.get $vs)))))
      (local.set $x (i16x8.extend_low_i8x16_s (v128.load (local.get $vq))))
      (local.set $y (i16x8.extend_high_i8x16_s (v128.load (local.get $vq))))
      (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $x))))))
      (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $x))))))
      (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $y))))))
      (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $y))))))
      (local.set $x (i16x8.extend_low_i8x16_s (v128.load offset=16 (local.get $vq))))
      (local.set $y (i16x8.extend_high_i8x16_s (v128.load offset=16 (local.get $vq))))
      (local.set $a4 (f32x4.add (local.get $a4) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $x))))))
      (local.set $a5 (f32x4.add (local.get $a5) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $x))))))
      (local.set $a6 (f32x4.add (local.get $a6) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $y))))))
      (local.set $a7 (f32x4.add (local.get $a7) (f32x4.mul (local.get $wv) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $y))))))
      (br_if $keys (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $count))))
    (call $store4 (local.get $o) (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3))
    (call $store4 (i32.add (local.get $o) (i32.const 64)) (local.get $a4) (local.get $a5) (local.get $a6) (local.get $a7)))

  ;; Scores of slots [from, to) of KV head `head` (layer x KV + kv head) for the query at q, to sp[slot]:
  ;; sum over blocks of kscale x (sum over the block of q_c k_c, c in order), / sqrt(hd). Eight slots
  ;; per round, one per lane (up to 7 past `to` are computed and ignored); the keys are stored
  ;; transposed, so eight slots of one c are 8 consecutive bytes.
  (func $score_slots (param $q i32) (param $head i32) (param $from i32) (param $to i32) (param $sp i32)
    (local $hd i32) (local $slots i32) (local $kb i32) (local $ksb i32) (local $b i32) (local $c i32) (local $nb i32)
    (local $k v128) (local $qv v128) (local $pa v128) (local $pb v128) (local $da v128) (local $db v128) (local $root v128)
    (local $kp i32) (local $ks i32)
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $nb (i32.shr_u (local.get $hd) (i32.const 5)))
    (local.set $slots (i32.load (global.get $KV_SLOTS)))
    (local.set $kb (i32.add (i32.load (global.get $P_KQ)) (i32.mul (i32.mul (local.get $head) (local.get $hd)) (local.get $slots))))
    (local.set $ksb (i32.add (i32.load (global.get $P_KS)) (i32.shl (i32.mul (i32.mul (local.get $head) (local.get $nb)) (local.get $slots)) (i32.const 2))))
    (local.set $root (f32x4.splat (f32.sqrt (f32.convert_i32_u (local.get $hd)))))
    (block $done (loop $eights
      (br_if $done (i32.ge_u (local.get $from) (local.get $to)))
      (local.set $da (v128.const i32x4 0 0 0 0))
      (local.set $db (v128.const i32x4 0 0 0 0))
      (local.set $b (i32.const 0))
      (loop $blocks
        (local.set $pa (v128.const i32x4 0 0 0 0))
        (local.set $pb (v128.const i32x4 0 0 0 0))
        (local.set $kp (i32.add (local.get $kb) (i32.add (i32.mul (i32.shl (local.get $b) (i32.const 5)) (local.get $slots)) (local.get $from))))
        (local.set $c (i32.const 0))
        (loop $cs
          (local.set $k (i16x8.extend_low_i8x16_s (v128.load64_zero (local.get $kp))))
          (local.set $qv (v128.load32_splat (i32.add (local.get $q) (i32.shl (i32.add (i32.shl (local.get $b) (i32.const 5)) (local.get $c)) (i32.const 2)))))
          (local.set $pa (f32x4.add (local.get $pa) (f32x4.mul (local.get $qv) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $k))))))
          (local.set $pb (f32x4.add (local.get $pb) (f32x4.mul (local.get $qv) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $k))))))
          (local.set $kp (i32.add (local.get $kp) (local.get $slots)))
          (br_if $cs (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (i32.const 32))))
        (local.set $ks (i32.add (local.get $ksb) (i32.shl (i32.add (i32.mul (local.get $b) (local.get $slots)) (local.get $from)) (i32.const 2))))
        (local.set $da (f32x4.add (local.get $da) (f32x4.mul (v128.load (local.get $ks)) (local.get $pa))))
        (local.set $db (f32x4.add (local.get $db) (f32x4.mul (v128.load offset=16 (local.get $ks)) (local.get $pb))))
        (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
      (v128.store (i32.add (local.get $sp) (i32.shl (local.get $from) (i32.const 2))) (f32x4.div (local.get $da) (local.get $root)))
      (v128.store offset=16 (i32.add (local.get $sp) (i32.shl (local.get $from) (i32.const 2))) (f32x4.div (local.get $db) (local.get $root)))
      (local.set $from (i32.add (local.get $from) (i32.const 8)))
      (br $eights))))

  ;; 4h, MLP half: out (in Y) = x1 + (d3 * H_n silu(d2 * H_n (d1 * ZCRMS(x1, pre_hada) | 0)))[:d].
  (func $mlp (param $i i32)
    (local $d i32) (local $n i32) (local $z i32) (local $c i32) (local $v v128) (local $p i32) (local $d2 i32)
    (local.set $d (call $g (global.get $G_D)))
    (local.set $n (call $g (global.get $G_HADA)))
    (local.set $z (i32.load (global.get $P_Z)))
    (call $zcrms (i32.load (global.get $P_X1)) (call $fdata (call $r_layer (local.get $i) (global.get $L_PRE_HADA))) (local.get $d) (local.get $z))
    (call $zero (i32.add (local.get $z) (i32.shl (local.get $d) (i32.const 2))) (i32.shl (i32.sub (local.get $n) (local.get $d)) (i32.const 2)))
    (call $vmul (local.get $z) (call $fdata (call $r_layer (local.get $i) (global.get $L_D1))) (local.get $n))
    (call $fwht_norm (local.get $z) (local.get $n))
    (local.set $d2 (call $fdata (call $r_layer (local.get $i) (global.get $L_D2))))
    (loop $silu  ;; four at a time (n is a multiple of 4), each lane as one scalar silu
      (local.set $p (i32.add (local.get $z) (i32.shl (local.get $c) (i32.const 2))))
      (local.set $v (f32x4.mul (v128.load (i32.add (local.get $d2) (i32.shl (local.get $c) (i32.const 2)))) (v128.load (local.get $p))))
      (v128.store (local.get $p) (f32x4.mul (local.get $v) (call $sigmoid4 (local.get $v))))
      (br_if $silu (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 4))) (local.get $n))))
    (call $fwht_norm (local.get $z) (local.get $n))
    (memory.copy (i32.load (global.get $P_Y)) (i32.load (global.get $P_X1)) (i32.shl (local.get $d) (i32.const 2)))
    (call $mul_add (i32.load (global.get $P_Y)) (call $fdata (call $r_layer (local.get $i) (global.get $L_D3))) (local.get $z) (local.get $d)))

  ;; x[i] *= s[i] over n f32 (n a multiple of 4)
  (func $vmul (param $x i32) (param $s i32) (param $n i32)
    (local $i i32) (local $e i32)
    (local.set $e (i32.shl (local.get $n) (i32.const 2)))
    (loop $l
      (v128.store (i32.add (local.get $x) (local.get $i))
        (f32x4.mul (v128.load (i32.add (local.get $x) (local.get $i))) (v128.load (i32.add (local.get $s) (local.get $i)))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $e)))))

  ;; x = (X_0 + ... + X_{lanes-1}) / lanes: f32 sums from 0 in lane order, then one division each.
  (func $lane_mean (param $x i32)
    (local $d i32) (local $k i32) (local $c i32) (local $lanes f32)
    (local.set $d (call $g (global.get $G_D)))
    (call $zero (local.get $x) (i32.shl (local.get $d) (i32.const 2)))
    (loop $lanes_
      (call $axpy (local.get $x) (f32.const 1) (i32.add (i32.load (global.get $P_X)) (i32.shl (i32.mul (local.get $k) (local.get $d)) (i32.const 2))) (local.get $d))
      (br_if $lanes_ (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (call $g (global.get $G_LANES)))))
    (local.set $lanes (f32.convert_i32_u (call $g (global.get $G_LANES))))
    (loop $mean
      (f32.store (i32.add (local.get $x) (local.get $c)) (f32.div (f32.load (i32.add (local.get $x) (local.get $c))) (local.get $lanes)))
      (br_if $mean (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 4))) (i32.shl (local.get $d) (i32.const 2))))))

  ;; 5. Output: x = lane mean; ZCRMS(x, final_norm); logits = E x (tied).
  (func $output
    (local $d i32) (local $x i32)
    (local.set $d (call $g (global.get $G_D)))
    (local.set $x (i32.load (global.get $P_XM)))
    (call $lane_mean (local.get $x))
    (call $zcrms (local.get $x) (call $fdata (call $r_final)) (local.get $d) (local.get $x))
    (call $prepare (call $rec (i32.const 0)) (local.get $x))
    (call $product (call $rec (i32.const 0)) (i32.load (global.get $P_LOGITS)) (i32.const 0) (call $g (global.get $G_VOCAB))))

  ;; 1-2. XM = embedding row of `tok` x sqrt(d), copied to every lane of the lanes at x.
  (func $embed (param $tok i32) (param $x i32)
    (local $d i32) (local $k i32)
    (local.set $d (call $g (global.get $G_D)))
    (call $dequant_row (call $rec (i32.const 0)) (local.get $tok) (i32.load (global.get $P_XM)))
    (call $scale (i32.load (global.get $P_XM)) (local.get $d) (f32.load (global.get $SQRTD)))
    (loop $lanes
      (memory.copy (i32.add (local.get $x) (i32.shl (i32.mul (local.get $k) (local.get $d)) (i32.const 2)))
                   (i32.load (global.get $P_XM)) (i32.shl (local.get $d) (i32.const 2)))
      (br_if $lanes (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (call $g (global.get $G_LANES))))))

  ;; step(token, wantLogits): runs `token` at the next logical position; with wantLogits the logits
  ;; are at *ADDR_LOGITS. 0, or ERR_NOT_LOADED / ERR_TOKEN / ERR_FULL (state unchanged) / ERR_MEMORY.
  (func $step (export "step") (param $tok i32) (param $want i32) (result i32)
    (local $p i32) (local $d i32) (local $ld i32) (local $k i32) (local $at i32) (local $i i32) (local $r i32)
    (local $t0 f64)
    (if (i32.load (global.get $P_JOBLOG)) (then (local.set $t0 (call $now))))
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (global.get $ERR_NOT_LOADED))))
    (if (i32.eqz (i32.load (global.get $KV_CAP)))
      (then (if (local.tee $r (call $session_reset_i (i32.const 0))) (then (return (local.get $r))))))
    (local.set $p (i32.load (global.get $POS)))
    (if (i32.ge_u (local.get $tok) (call $g (global.get $G_VOCAB))) (then (return (global.get $ERR_TOKEN))))
    (if (i32.ge_u (local.get $p) (call $g (global.get $G_MAXSEQ))) (then (return (global.get $ERR_FULL))))
    (i32.store (i32.add (i32.load (global.get $P_HIST)) (i32.shl (local.get $p) (i32.const 2))) (local.get $tok))
    (i32.atomic.store (global.get $IDLE) (i32.const 0))
    (local.set $d (call $g (global.get $G_D)))
    (local.set $ld (i32.mul (local.get $d) (call $g (global.get $G_LANES))))
    ;; 1-2. embedding x sqrt(d), broadcast to the lanes
    (call $embed (local.get $tok) (i32.load (global.get $P_X)))
    (local.set $at (call $trace (i32.load (global.get $P_XM)) (local.get $d) (i32.const 0)))
    (if (i32.load (global.get $HEADS_ON)) (then (call $pool_cell (i32.load (global.get $P_XM)))))  ;; cell 0
    ;; 3. engram keys and values
    (local.set $at (call $engram (local.get $p) (local.get $at)))
    (call $rope_at (local.get $p))
    ;; 4. the layers
    (loop $layers
      (local.set $at (call $trace (i32.load (global.get $P_X)) (local.get $ld) (local.get $at)))
      (call $mhc_coeffs (local.get $i))
      (call $read_lanes (local.get $i))
      (call $attention (local.get $i) (local.get $p))
      (call $mlp (local.get $i))
      (call $write_lanes)
      (local.set $at (call $trace (i32.load (global.get $P_X)) (local.get $ld) (local.get $at)))
      (if (i32.load (global.get $HEADS_ON)) (then (call $pool_layer)))  ;; cell i + 1
      (br_if $layers (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (call $g (global.get $G_L)))))
    (i32.store (global.get $POS) (i32.add (local.get $p) (i32.const 1)))
    (if (local.get $want) (then (call $output)))
    (i32.atomic.store (global.get $IDLE) (i32.const 1))
    (if (i32.load (global.get $P_JOBLOG))
      (then (call $log_span (global.get $JOBLOG_STEP) (i32.const 0) (i32.const 0) (i32.const 1) (local.get $t0))))
    (i32.const 0))

  ;; ------------------------------------------------------------------------------------------
  ;; Prefill and snapshots (docs/engine.md, "Prefill and snapshots")
  ;; ------------------------------------------------------------------------------------------

  ;; Checks a prefill of the n u32 ids at `ids` before any work: every id below the vocabulary
  ;; (ERR_TOKEN, ADDR_ERR_DETAIL = the index of the first that is not) and room for n more positions
  ;; (ERR_FULL). 0 when it may run.
  (func $prefill_check (param $ids i32) (param $n i32) (result i32)
    (local $i i32)
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (if (i32.ge_u (i32.load (i32.add (local.get $ids) (i32.shl (local.get $i) (i32.const 2)))) (call $g (global.get $G_VOCAB)))
        (then (i32.store (global.get $ERR_DETAIL) (local.get $i)) (return (global.get $ERR_TOKEN))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $each)))
    (if (i64.gt_u (i64.add (i64.extend_i32_u (i32.load (global.get $POS))) (i64.extend_i32_u (local.get $n)))
                  (i64.extend_i32_u (call $g (global.get $G_MAXSEQ))))
      (then (return (global.get $ERR_FULL))))
    (i32.const 0))

  ;; prefill(ids, n, wantLogits): runs the n u32 ids at `ids` from the next position, leaving exactly
  ;; the state (KV, engram ring, history, position, head pooling) and, with wantLogits, the logits of
  ;; n `step`s, in chunks of CHUNK tokens whose products expand each packed row once for the whole
  ;; chunk (one step at a time while the parity trace is on). 0, or ERR_NOT_LOADED / ERR_TOKEN /
  ;; ERR_FULL / ERR_MEMORY, all checked before any work (the session is then unchanged).
  (func $prefill (export "prefill") (param $ids i32) (param $n i32) (param $want i32) (result i32)
    (local $i i32) (local $r i32) (local $m i32) (local $t0 f64)
    (if (i32.load (global.get $P_JOBLOG)) (then (local.set $t0 (call $now))))
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (global.get $ERR_NOT_LOADED))))
    (if (i32.eqz (i32.load (global.get $KV_CAP)))
      (then (if (local.tee $r (call $session_reset_i (i32.const 0))) (then (return (local.get $r))))))
    (if (local.tee $r (call $prefill_check (local.get $ids) (local.get $n))) (then (return (local.get $r))))
    (if (i32.load (global.get $P_TRACE))
      (then
        (block $done (loop $each
          (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
          (drop (call $step (i32.load (i32.add (local.get $ids) (i32.shl (local.get $i) (i32.const 2))))
                            (i32.and (local.get $want) (i32.eq (i32.add (local.get $i) (i32.const 1)) (local.get $n)))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $each)))
        (return (i32.const 0))))
    (if (local.tee $r (call $batch_ready)) (then (return (local.get $r))))
    (i32.atomic.store (global.get $IDLE) (i32.const 0))
    (block $done (loop $chunks
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $m (i32.sub (local.get $n) (local.get $i)))
      (if (i32.gt_u (local.get $m) (global.get $CHUNK)) (then (local.set $m (global.get $CHUNK))))
      (call $prefill_chunk (i32.add (local.get $ids) (i32.shl (local.get $i) (i32.const 2))) (local.get $m)
        (i32.and (local.get $want) (i32.eq (i32.add (local.get $i) (local.get $m)) (local.get $n))))
      (local.set $i (i32.add (local.get $i) (local.get $m)))
      (br $chunks)))
    (i32.atomic.store (global.get $IDLE) (i32.const 1))
    (if (i32.load (global.get $P_JOBLOG))
      (then (call $log_span (global.get $JOBLOG_PREFILL) (i32.const 0) (i32.const 0) (local.get $n) (local.get $t0))))
    (i32.const 0))

  ;; Makes the batch blocks on the first prefill after a load (the per-token slices of BSLICES, the
  ;; lanes, the prepared activations, the cells), and row scratch for every thread slot. 0 or ERR_MEMORY.
  (func $batch_ready (result i32)
    (local $d i32) (local $qd i32) (local $kvd i32) (local $ok i32) (local $t i32) (local $p i32) (local $ld i32)
    (if (i32.eqz (i32.load (global.get $BATCH_OK)))
      (then
        (local.set $d (i32.shl (call $g (global.get $G_D)) (i32.const 2)))
        (local.set $qd (i32.shl (i32.mul (call $g (global.get $G_H)) (call $g (global.get $G_HD))) (i32.const 2)))
        (local.set $kvd (i32.shl (i32.mul (call $g (global.get $G_KV)) (call $g (global.get $G_HD))) (i32.const 2)))
        (local.set $ld (i32.mul (local.get $d) (call $g (global.get $G_LANES))))
        ;; every field whose value one phase of a chunk leaves for a later one, with its size per token
        (local.set $ok (call $slice (i32.const 0) (global.get $P_U) (local.get $d)))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 1) (global.get $P_B) (local.get $d))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 2) (global.get $P_H) (local.get $d))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 3) (global.get $P_Q) (local.get $qd))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 4) (global.get $P_K) (local.get $kvd))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 5) (global.get $P_V) (local.get $kvd))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 6) (global.get $P_GATE) (local.get $qd))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 7) (global.get $P_O) (local.get $qd))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 8) (global.get $P_A) (local.get $d))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 9) (global.get $P_HPOST) (i32.const 64))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 10) (global.get $P_ROUTE) (i32.const 1024))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 11) (global.get $P_RCOS) (i32.shl (call $g (global.get $G_HD)) (i32.const 1)))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 12) (global.get $P_RSIN) (i32.shl (call $g (global.get $G_HD)) (i32.const 1)))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 13) (global.get $P_EK) (i32.mul (call $g (global.get $G_NSITE)) (local.get $d)))))
        (local.set $ok (i32.and (local.get $ok) (call $slice (i32.const 14) (global.get $P_EV) (i32.mul (call $g (global.get $G_NSITE)) (local.get $d)))))
        (i32.store (i32.add (call $slice_entry (i32.const 15)) (global.get $SL_FIELD)) (i32.const 0))  ;; the end
        (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_BLANES) (i32.shl (global.get $CHUNK) (i32.const 2))) (i32.const 0))))
        (if (i32.eqz (local.get $ok)) (then (return (global.get $ERR_MEMORY))))
        (loop $lanes
          (if (i32.eqz (local.tee $p (call $alloc (local.get $ld)))) (then (return (global.get $ERR_MEMORY))))
          (i32.store (i32.add (i32.load (global.get $P_BLANES)) (i32.shl (local.get $t) (i32.const 2))) (local.get $p))
          (br_if $lanes (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (global.get $CHUNK))))
        (i32.store (global.get $BACT_STRIDE) (i32.add (i32.and (i32.add (i32.shl (i32.load (global.get $MAXPAD)) (i32.const 1)) (i32.const 63)) (i32.const -64)) (i32.const 64)))
        (local.set $ok (i32.ne (call $buf (global.get $P_BACT) (i32.mul (i32.load (global.get $BACT_STRIDE)) (global.get $CHUNK))) (i32.const 0)))
        (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_BACTS)
          (i32.mul (i32.shr_u (i32.load (global.get $MAXPAD)) (i32.const 5)) (i32.shl (global.get $CHUNK) (i32.const 2)))) (i32.const 0))))
        (if (i32.load (global.get $NHEADS))
          (then (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_BCELLS)
            (i32.mul (i32.mul (global.get $CHUNK) (i32.add (call $g (global.get $G_L)) (i32.const 1))) (local.get $d))) (i32.const 0))))))
        (if (i32.eqz (local.get $ok)) (then (return (global.get $ERR_MEMORY))))
        (i32.store (global.get $BATCH_OK) (i32.const 1))))
    (if (i32.gt_u (i32.load (global.get $THREADS)) (i32.load (global.get $BROW_SLOTS)))
      (then
        (i32.store (global.get $BROW_BYTES) (i32.load (global.get $BACT_STRIDE)))  ;; a whole row, plus one block
        (if (i32.eqz (call $buf (global.get $P_BROW) (i32.mul (i32.load (global.get $THREADS)) (i32.load (global.get $BROW_BYTES)))))
          (then (return (global.get $ERR_MEMORY))))
        (i32.store (global.get $BROW_SLOTS) (i32.load (global.get $THREADS)))))
    (i32.const 0))

  ;; Entry idx of BSLICES: pointer field `field`, CHUNK slices of `bytes` (rounded up to 64) for it.
  ;; 1, or 0 when the memory cannot grow.
  (func $slice (param $idx i32) (param $field i32) (param $bytes i32) (result i32)
    (local $stride i32) (local $e i32) (local $p i32)
    (local.set $stride (i32.and (i32.add (local.get $bytes) (i32.const 63)) (i32.const -64)))
    (local.set $p (call $alloc (i32.add (i32.mul (local.get $stride) (global.get $CHUNK)) (i32.const 64))))
    (local.set $e (call $slice_entry (local.get $idx)))
    (i32.store (i32.add (local.get $e) (global.get $SL_FIELD)) (local.get $field))
    (i32.store (i32.add (local.get $e) (global.get $SL_BASE)) (local.get $p))
    (i32.store (i32.add (local.get $e) (global.get $SL_STRIDE)) (local.get $stride))
    (i32.ne (local.get $p) (i32.const 0)))

  ;; Entry idx of BSLICES.
  (func $slice_entry (param $idx i32) (result i32)
    (i32.add (global.get $BSLICES) (i32.mul (local.get $idx) (global.get $SL_SIZE))))

  ;; Points every sliced field at token t's slice: from here on the step's functions work on token t.
  (func $aim (param $t i32)
    (local $e i32)
    (local.set $e (global.get $BSLICES))
    (block $done (loop $each
      (br_if $done (i32.eqz (i32.load (i32.add (local.get $e) (global.get $SL_FIELD)))))
      (i32.store (i32.load (i32.add (local.get $e) (global.get $SL_FIELD)))
        (i32.add (i32.load (i32.add (local.get $e) (global.get $SL_BASE)))
                 (i32.mul (local.get $t) (i32.load (i32.add (local.get $e) (global.get $SL_STRIDE))))))
      (local.set $e (i32.add (local.get $e) (global.get $SL_SIZE)))
      (br $each))))

  ;; The BSLICES entry of `field` (one of those $batch_ready made).
  (func $slice_of (param $field i32) (result i32)
    (local $e i32)
    (local.set $e (global.get $BSLICES))
    (loop $find
      (if (i32.ne (i32.load (i32.add (local.get $e) (global.get $SL_FIELD))) (local.get $field))
        (then (local.set $e (i32.add (local.get $e) (global.get $SL_SIZE))) (br $find))))
    (local.get $e))

  ;; Token t's lanes, and its cell c (0: the scaled embedding, i + 1: the lane mean after layer i).
  (func $blanes (param $t i32) (result i32)
    (i32.load (i32.add (i32.load (global.get $P_BLANES)) (i32.shl (local.get $t) (i32.const 2)))))
  (func $bcell (param $t i32) (param $c i32) (result i32)
    (i32.add (i32.load (global.get $P_BCELLS)) (i32.shl (i32.mul (i32.add (i32.mul (local.get $t)
      (i32.add (call $g (global.get $G_L)) (i32.const 1))) (local.get $c)) (call $g (global.get $G_D))) (i32.const 2))))

  ;; One chunk of n <= CHUNK tokens from position POS: what n steps do, layer by layer for the whole
  ;; chunk (the history, then each token's embedding, RoPE tables and engram in order, then the
  ;; layers, then the pooling of the cells in step order and the last token's logits).
  (func $prefill_chunk (param $ids i32) (param $n i32) (param $want i32)
    (local $p0 i32) (local $t i32) (local $i i32) (local $c i32)
    (local.set $p0 (i32.load (global.get $POS)))
    (memory.copy (global.get $BSAVED) (global.get $P_U) (i32.const 116))
    (loop $hist  ;; first: the engram hash of a position reads the tokens up to it
      (i32.store (i32.add (i32.load (global.get $P_HIST)) (i32.shl (i32.add (local.get $p0) (local.get $t)) (i32.const 2)))
                 (i32.load (i32.add (local.get $ids) (i32.shl (local.get $t) (i32.const 2)))))
      (br_if $hist (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $n))))
    (local.set $t (i32.const 0))
    (loop $tokens
      (call $aim (local.get $t))
      (call $embed (i32.load (i32.add (local.get $ids) (i32.shl (local.get $t) (i32.const 2)))) (call $blanes (local.get $t)))
      (if (i32.load (global.get $HEADS_ON))
        (then (memory.copy (call $bcell (local.get $t) (i32.const 0)) (i32.load (global.get $P_XM)) (i32.shl (call $g (global.get $G_D)) (i32.const 2)))))
      (call $rope_at (i32.add (local.get $p0) (local.get $t)))
      (drop (call $engram (i32.add (local.get $p0) (local.get $t)) (i32.const 0)))
      (br_if $tokens (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $n))))
    (loop $layers
      (call $chunk_layer (local.get $i) (local.get $p0) (local.get $n))
      (br_if $layers (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (call $g (global.get $G_L)))))
    (memory.copy (global.get $P_U) (global.get $BSAVED) (i32.const 116))
    (i32.store (global.get $POS) (i32.add (local.get $p0) (local.get $n)))
    (if (i32.load (global.get $HEADS_ON))
      (then
        (local.set $t (i32.const 0))
        (loop $pool_tokens
          (local.set $c (i32.const 0))
          (loop $pool_cells
            (call $pool_cell (call $bcell (local.get $t) (local.get $c)))
            (br_if $pool_cells (i32.le_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (call $g (global.get $G_L)))))
          (br_if $pool_tokens (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $n))))))
    (if (local.get $want)
      (then
        (memory.copy (i32.load (global.get $P_X)) (call $blanes (i32.sub (local.get $n) (i32.const 1)))
          (i32.shl (i32.mul (call $g (global.get $G_D)) (call $g (global.get $G_LANES))) (i32.const 2)))
        (call $output))))

  ;; Layer i for the n tokens of a chunk from position p0: (A) token by token the mHC coefficients,
  ;; the lanes read and h; the q, k, v and gate products of all tokens at once; (B) token by token, in
  ;; order, RoPE, the KV rows and attention (token t sees the rows just cached for tokens before it);
  ;; the out product of all tokens; (C) token by token the residual, the MLP and the lanes written.
  (func $chunk_layer (param $i i32) (param $p0 i32) (param $n i32)
    (local $t i32) (local $px i32)
    (local.set $px (i32.load (global.get $P_X)))
    (loop $a
      (i32.store (global.get $P_X) (call $blanes (local.get $t)))
      (call $aim (local.get $t))
      (call $mhc_coeffs (local.get $i))
      (call $read_lanes (local.get $i))
      (call $attn_norm (local.get $i))
      (br_if $a (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $n))))
    (i32.store (global.get $P_X) (local.get $px))
    (i32.store (global.get $BPREP_SRC) (i32.const 0))
    (call $bfuse (i32.const 0) (call $r_layer (local.get $i) (global.get $L_Q)) (global.get $P_Q))
    (call $bfuse (i32.const 1) (call $r_layer (local.get $i) (global.get $L_K)) (global.get $P_K))
    (call $bfuse (i32.const 2) (call $r_layer (local.get $i) (global.get $L_V)) (global.get $P_V))
    (call $bfuse (i32.const 3) (call $r_layer (local.get $i) (global.get $L_GATE)) (global.get $P_GATE))
    (call $batch_products (global.get $P_H) (i32.const 4) (local.get $n))
    (local.set $t (i32.const 0))
    (loop $b
      (call $aim (local.get $t))
      (call $attn_heads (local.get $i) (i32.add (local.get $p0) (local.get $t)))
      (br_if $b (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $n))))
    (i32.store (global.get $BPREP_SRC) (i32.const 0))
    (call $batch_product (call $r_layer (local.get $i) (global.get $L_OUT)) (global.get $P_O) (global.get $P_A) (local.get $n))
    (local.set $t (i32.const 0))
    (loop $c
      (i32.store (global.get $P_X) (call $blanes (local.get $t)))
      (call $aim (local.get $t))
      (call $attn_residual (local.get $i))
      (call $mlp (local.get $i))
      (call $write_lanes)  ;; swaps P_X and P_NEWX: the token keeps the new lanes, P_NEWX its old ones
      (i32.store (i32.add (i32.load (global.get $P_BLANES)) (i32.shl (local.get $t) (i32.const 2))) (i32.load (global.get $P_X)))
      (if (i32.load (global.get $HEADS_ON))
        (then (call $lane_mean (call $bcell (local.get $t) (i32.add (local.get $i) (i32.const 1))))))
      (i32.store (global.get $P_X) (local.get $px))
      (br_if $c (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $n)))))

  ;; Sets product k (0..3) of the next batched job: matrix m into the slices of field `out`.
  (func $bfuse (param $k i32) (param $m i32) (param $out i32)
    (local $e i32) (local $o i32)
    (local.set $e (call $bfused (local.get $k)))
    (local.set $o (call $slice_of (local.get $out)))
    (i32.store (i32.add (local.get $e) (global.get $BF_MATRIX)) (local.get $m))
    (i32.store (i32.add (local.get $e) (global.get $BF_FIELD)) (local.get $out))
    (i32.store (i32.add (local.get $e) (global.get $BF_BASE)) (i32.load (i32.add (local.get $o) (global.get $SL_BASE))))
    (i32.store (i32.add (local.get $e) (global.get $BF_STRIDE)) (i32.load (i32.add (local.get $o) (global.get $SL_STRIDE)))))

  ;; Entry k of BFUSED.
  (func $bfused (param $k i32) (result i32)
    (i32.add (global.get $BFUSED) (i32.mul (local.get $k) (global.get $BF_SIZE))))

  ;; The `count` products set by $bfuse, all reading the n tokens' vectors of field `src`, as one job
  ;; when their layouts agree (q, k, v and gate), else one by one.
  (func $batch_products (param $src i32) (param $count i32) (param $n i32)
    (local $k i32) (local $m0 i32) (local $m i32) (local $same i32) (local $rows i32) (local $e i32)
    (local.set $m0 (i32.load (i32.add (call $bfused (i32.const 0)) (global.get $BF_MATRIX))))
    (local.set $same (i32.const 1))
    (loop $each
      (local.set $m (i32.load (i32.add (call $bfused (local.get $k)) (global.get $BF_MATRIX))))
      (local.set $rows (i32.add (local.get $rows) (call $d_rows (local.get $m))))
      (local.set $same (i32.and (local.get $same) (i32.and
        (i32.and (i32.eq (call $d_cols (local.get $m)) (call $d_cols (local.get $m0)))
                 (i32.eq (call $d_group (local.get $m)) (call $d_group (local.get $m0))))
        (i32.eq (call $layout (call $d_kind (local.get $m))) (call $layout (call $d_kind (local.get $m0)))))))
      (br_if $each (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $count))))
    (if (i32.eqz (local.get $same))
      (then  ;; one by one (each writes entry 0, which the loop has already passed)
        (local.set $k (i32.const 0))
        (loop $one
          (local.set $e (call $bfused (local.get $k)))
          (call $batch_product (i32.load (i32.add (local.get $e) (global.get $BF_MATRIX))) (local.get $src)
            (i32.load (i32.add (local.get $e) (global.get $BF_FIELD))) (local.get $n))
          (br_if $one (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $count))))
        (return)))
    (call $batch_prepare (local.get $m0) (local.get $src) (local.get $n))
    (call $batch_run (local.get $count) (local.get $rows) (local.get $n)))

  ;; The product of CQ matrix m with the n tokens' vectors of field `src` into their slices of field
  ;; `out`: the vectors prepared for m's layout (unless they already are), then every row expanded
  ;; once and multiplied with all n, rows split across threads.
  (func $batch_product (param $m i32) (param $src i32) (param $out i32) (param $n i32)
    (call $bfuse (i32.const 0) (local.get $m) (local.get $out))
    (call $batch_prepare (local.get $m) (local.get $src) (local.get $n))
    (call $batch_run (i32.const 1) (call $d_rows (local.get $m)) (local.get $n)))

  ;; The n tokens' vectors of field `src` prepared for m's layout into P_BACT / P_BACTS, unless they
  ;; already are (BPREP_*).
  (func $batch_prepare (param $m i32) (param $src i32) (param $n i32)
    (local $s i32) (local $t i32)
    (local.set $s (call $slice_of (local.get $src)))
    (if (i32.or (i32.or (i32.ne (i32.load (global.get $BPREP_SRC)) (local.get $src))
                        (i32.ne (i32.load (global.get $BPREP_LAYOUT)) (call $layout (call $d_kind (local.get $m)))))
                (i32.or (i32.ne (i32.load (global.get $BPREP_COLS)) (call $d_cols (local.get $m)))
                        (i32.ne (i32.load (global.get $BPREP_GROUP)) (call $d_group (local.get $m)))))
      (then
        (loop $prep
          (call $prepare_to (local.get $m)
            (i32.add (i32.load (i32.add (local.get $s) (global.get $SL_BASE)))
                     (i32.mul (local.get $t) (i32.load (i32.add (local.get $s) (global.get $SL_STRIDE)))))
            (i32.add (i32.load (global.get $P_BACT)) (i32.mul (local.get $t) (i32.load (global.get $BACT_STRIDE))))
            (i32.add (i32.load (global.get $P_BACTS)) (i32.shl (local.get $t) (i32.const 2)))
            (i32.shl (global.get $CHUNK) (i32.const 2)))
          (br_if $prep (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $n))))
        (i32.store (global.get $BPREP_SRC) (local.get $src))
        (i32.store (global.get $BPREP_LAYOUT) (call $layout (call $d_kind (local.get $m))))
        (i32.store (global.get $BPREP_COLS) (call $d_cols (local.get $m)))
        (i32.store (global.get $BPREP_GROUP) (call $d_group (local.get $m))))))

  ;; Runs the `count` products of BFUSED (rows in all) for n tokens: one job, rows split across threads.
  (func $batch_run (param $count i32) (param $rows i32) (param $n i32)
    (i32.store (global.get $BFUSED_N) (local.get $count))
    (i32.store (global.get $BFUSED_T) (local.get $n))
    (if (i32.and (i32.ge_u (local.get $rows) (i32.const 16)) (i32.gt_u (i32.load (global.get $THREADS)) (i32.const 1)))
      (then (call $run_job (global.get $JOB_BATCH) (local.get $rows) (call $chunk_for (local.get $rows) (i32.const 2))))
      (else (call $job_batch (i32.const 0) (local.get $rows) (i32.const 0)))))

  ;; JOB_BATCH: rows [b, e) of the batched products of BFUSED, counted through them in order, with thread
  ;; slot `slot`'s row scratch.
  (func $job_batch (param $b i32) (param $e i32) (param $slot i32)
    (local $k i32) (local $start i32) (local $end i32) (local $lo i32) (local $hi i32) (local $f i32)
    (loop $each
      (local.set $f (call $bfused (local.get $k)))
      (local.set $end (i32.add (local.get $start) (call $d_rows (i32.load (i32.add (local.get $f) (global.get $BF_MATRIX))))))
      (local.set $lo (select (local.get $b) (local.get $start) (i32.gt_u (local.get $b) (local.get $start))))
      (local.set $hi (select (local.get $e) (local.get $end) (i32.lt_u (local.get $e) (local.get $end))))
      (if (i32.lt_u (local.get $lo) (local.get $hi))
        (then (call $batch_rows (i32.load (i32.add (local.get $f) (global.get $BF_MATRIX)))
                (i32.load (i32.add (local.get $f) (global.get $BF_BASE))) (i32.load (i32.add (local.get $f) (global.get $BF_STRIDE)))
                (i32.sub (local.get $lo) (local.get $start)) (i32.sub (local.get $hi) (local.get $start)) (local.get $slot))))
      (local.set $start (local.get $end))
      (br_if $each (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.load (global.get $BFUSED_N))))))

  ;; Rows [b, e) of matrix m times the BFUSED_T prepared tokens, into out (token t's at out + t os):
  ;; each packed row expanded once to int16 levels in the kernel's column order, then its dot with
  ;; four tokens at a time ($batch_dot4), x the level scale.
  (func $batch_rows (param $m i32) (param $out i32) (param $os i32) (param $b i32) (param $e i32) (param $slot i32)
    (local $n i32) (local $kind i32) (local $nb i32) (local $bpg i32) (local $tbl v128)
    (local $cs v128) (local $scr i32) (local $t i32) (local $acc v128) (local $at i32)
    (local $left i32) (local $astride i32)
    (local.set $n (i32.load (global.get $BFUSED_T)))
    (local.set $kind (call $d_kind (local.get $m)))
    (local.set $nb (i32.shr_u (call $d_pad (local.get $m)) (i32.const 5)))
    (local.set $bpg (i32.shr_u (call $d_group (local.get $m)) (i32.const 5)))
    (local.set $tbl (v128.load (call $kind_cbq (local.get $kind))))
    (local.set $cs (f32x4.splat (call $cb_scale (local.get $m))))
    (local.set $scr (i32.add (i32.load (global.get $P_BROW)) (i32.mul (local.get $slot) (i32.load (global.get $BROW_BYTES)))))
    (local.set $astride (i32.load (global.get $BACT_STRIDE)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $b) (local.get $e)))
      (call $expand (local.get $kind) (i32.add (call $d_data (local.get $m)) (i32.mul (local.get $b) (call $d_row_bytes (local.get $m))))
        (local.get $nb) (local.get $tbl) (local.get $scr))
      (local.set $t (i32.const 0))
      (loop $quads
        (local.set $acc (f32x4.mul (local.get $cs) (call $batch_dot4 (local.get $scr)
          (i32.add (call $d_norms (local.get $m)) (i32.shl (i32.mul (local.get $b) (call $d_groups (local.get $m))) (i32.const 1)))
          (local.get $nb) (local.get $bpg)
          (i32.add (i32.load (global.get $P_BACT)) (i32.mul (local.get $t) (local.get $astride))) (local.get $astride)
          (i32.add (i32.load (global.get $P_BACTS)) (i32.shl (local.get $t) (i32.const 2))))))
        (local.set $at (i32.add (i32.add (local.get $out) (i32.mul (local.get $t) (local.get $os))) (i32.shl (local.get $b) (i32.const 2))))
        (local.set $left (i32.sub (local.get $n) (local.get $t)))
        (f32.store (local.get $at) (f32x4.extract_lane 0 (local.get $acc)))
        (if (i32.gt_u (local.get $left) (i32.const 1)) (then (f32.store (i32.add (local.get $at) (local.get $os)) (f32x4.extract_lane 1 (local.get $acc)))))
        (if (i32.gt_u (local.get $left) (i32.const 2)) (then (f32.store (i32.add (local.get $at) (i32.shl (local.get $os) (i32.const 1))) (f32x4.extract_lane 2 (local.get $acc)))))
        (if (i32.gt_u (local.get $left) (i32.const 3)) (then (f32.store (i32.add (local.get $at) (i32.mul (local.get $os) (i32.const 3))) (f32x4.extract_lane 3 (local.get $acc)))))
        (br_if $quads (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 4))) (local.get $n))))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $rows))))

  ;; A packed row of nb blocks (at p, kind `kind`, int8 levels `tbl`) as int16 levels at dst, 64 bytes
  ;; per block in the order the prepared activation uses (the row kernels' column orders).
  (func $expand (param $kind i32) (param $p i32) (param $nb i32) (param $tbl v128) (param $dst i32)
    (local $end i32) (local $w v128) (local $l0 v128) (local $l1 v128) (local $l2 v128) (local $l3 v128)
    (local.set $end (i32.add (local.get $dst) (i32.shl (local.get $nb) (i32.const 6))))
    (if (i32.eq (local.get $kind) (global.get $KIND_4BIT))
      (then  ;; 4-bit: 16 bytes = one block; low nibble of byte j = column 2j, high = 2j + 1
        (loop $blocks
          (local.set $w (v128.load (local.get $p)))
          (local.set $l0 (i8x16.swizzle (local.get $tbl) (v128.and (local.get $w) (i8x16.splat (i32.const 15)))))
          (local.set $l1 (i8x16.swizzle (local.get $tbl) (i8x16.shr_u (local.get $w) (i32.const 4))))
          (call $store4 (local.get $dst) (i16x8.extend_low_i8x16_s (local.get $l0)) (i16x8.extend_high_i8x16_s (local.get $l0))
                                         (i16x8.extend_low_i8x16_s (local.get $l1)) (i16x8.extend_high_i8x16_s (local.get $l1)))
          (local.set $p (i32.add (local.get $p) (i32.const 16)))
          (br_if $blocks (i32.lt_u (local.tee $dst (i32.add (local.get $dst) (i32.const 64))) (local.get $end))))
        (return)))
    (if (i32.eq (local.get $kind) (global.get $KIND_3BIT))
      (then  ;; 3-bit: 12 bytes = one block = four 24-bit words; index t of word m = column 8m + t
        (loop $blocks
          (local.set $w (call $words3 (local.get $p)))
          (local.set $l0 (call $levels3 (local.get $w) (local.get $tbl) (i32.const 0)))
          (local.set $l1 (call $levels3 (local.get $w) (local.get $tbl) (i32.const 12)))
          (call $store4 (local.get $dst) (i16x8.extend_low_i8x16_s (local.get $l0)) (i16x8.extend_high_i8x16_s (local.get $l0))
                                         (i16x8.extend_low_i8x16_s (local.get $l1)) (i16x8.extend_high_i8x16_s (local.get $l1)))
          (local.set $p (i32.add (local.get $p) (i32.const 12)))
          (br_if $blocks (i32.lt_u (local.tee $dst (i32.add (local.get $dst) (i32.const 64))) (local.get $end))))
        (return)))
    ;; 2-bit and ternary: 16 bytes = two blocks; crumb t of byte j = column 4j + t (bytes 0..7: the
    ;; first block, 8..15: the second; an odd last block writes one block past, into the slack)
    (loop $pairs
      (local.set $w (v128.load (local.get $p)))
      (local.set $l0 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 0)))
      (local.set $l1 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 2)))
      (local.set $l2 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 4)))
      (local.set $l3 (call $crumbs (local.get $w) (local.get $tbl) (i32.const 6)))
      (call $store4 (local.get $dst) (i16x8.extend_low_i8x16_s (local.get $l0)) (i16x8.extend_low_i8x16_s (local.get $l1))
                                     (i16x8.extend_low_i8x16_s (local.get $l2)) (i16x8.extend_low_i8x16_s (local.get $l3)))
      (call $store4 (i32.add (local.get $dst) (i32.const 64))
                    (i16x8.extend_high_i8x16_s (local.get $l0)) (i16x8.extend_high_i8x16_s (local.get $l1))
                    (i16x8.extend_high_i8x16_s (local.get $l2)) (i16x8.extend_high_i8x16_s (local.get $l3)))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (br_if $pairs (i32.lt_u (local.tee $dst (i32.add (local.get $dst) (i32.const 128))) (local.get $end)))))

  ;; Stores four vectors at p, p + 16, p + 32, p + 48.
  (func $store4 (param $p i32) (param $a v128) (param $b v128) (param $c v128) (param $d v128)
    (v128.store (local.get $p) (local.get $a))
    (v128.store offset=16 (local.get $p) (local.get $b))
    (v128.store offset=32 (local.get $p) (local.get $c))
    (v128.store offset=48 (local.get $p) (local.get $d)))

  ;; One expanded row (w: int16 levels, 64 bytes per block; np: its fp16 group norms; bpg blocks per
  ;; group) against four tokens' prepared activations (x, xstride apart; their block scales at s,
  ;; CHUNK apart per block): lane j = the row kernels' result for token j, in their f32 order. Each
  ;; block's four int32 dots are exact; lane j then takes gs += isum x scale block by block and
  ;; acc += norm x gs group by group, as the row kernels do for one token.
  (func $batch_dot4 (param $w i32) (param $np i32) (param $nb i32) (param $bpg i32) (param $x i32) (param $xstride i32) (param $s i32) (result v128)
    (local $b i32) (local $k i32) (local $x1 i32) (local $x2 i32) (local $x3 i32) (local $f16t i32)
    (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (local $d0 v128) (local $d1 v128) (local $d2 v128) (local $d3 v128) (local $gs v128) (local $acc v128)
    (local.set $f16t (i32.load (global.get $P_F16)))
    (local.set $x1 (i32.add (local.get $x) (local.get $xstride)))
    (local.set $x2 (i32.add (local.get $x1) (local.get $xstride)))
    (local.set $x3 (i32.add (local.get $x2) (local.get $xstride)))
    (loop $blocks
      (local.set $w0 (v128.load (local.get $w)))
      (local.set $w1 (v128.load offset=16 (local.get $w)))
      (local.set $w2 (v128.load offset=32 (local.get $w)))
      (local.set $w3 (v128.load offset=48 (local.get $w)))
      (local.set $d0 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w0) (v128.load (local.get $x))) (i32x4.dot_i16x8_s (local.get $w1) (v128.load offset=16 (local.get $x))))
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w2) (v128.load offset=32 (local.get $x))) (i32x4.dot_i16x8_s (local.get $w3) (v128.load offset=48 (local.get $x))))))
      (local.set $d1 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w0) (v128.load (local.get $x1))) (i32x4.dot_i16x8_s (local.get $w1) (v128.load offset=16 (local.get $x1))))
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w2) (v128.load offset=32 (local.get $x1))) (i32x4.dot_i16x8_s (local.get $w3) (v128.load offset=48 (local.get $x1))))))
      (local.set $d2 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w0) (v128.load (local.get $x2))) (i32x4.dot_i16x8_s (local.get $w1) (v128.load offset=16 (local.get $x2))))
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w2) (v128.load offset=32 (local.get $x2))) (i32x4.dot_i16x8_s (local.get $w3) (v128.load offset=48 (local.get $x2))))))
      (local.set $d3 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w0) (v128.load (local.get $x3))) (i32x4.dot_i16x8_s (local.get $w1) (v128.load offset=16 (local.get $x3))))
        (i32x4.add (i32x4.dot_i16x8_s (local.get $w2) (v128.load offset=32 (local.get $x3))) (i32x4.dot_i16x8_s (local.get $w3) (v128.load offset=48 (local.get $x3))))))
      ;; lane j = the whole block dot of token j (a transpose of lane sums, exact)
      (local.set $d0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $d0) (local.get $d1))
                                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $d0) (local.get $d1))))
      (local.set $d2 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $d2) (local.get $d3))
                                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $d2) (local.get $d3))))
      (local.set $d0 (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $d0) (local.get $d2))
                                (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $d0) (local.get $d2))))
      (local.set $gs (f32x4.add (local.get $gs) (f32x4.mul (f32x4.convert_i32x4_s (local.get $d0)) (v128.load (local.get $s)))))
      (if (i32.eq (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $bpg))
        (then
          (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul
            (v128.load32_splat (i32.add (local.get $f16t) (i32.shl (i32.load16_u (local.get $np)) (i32.const 2)))) (local.get $gs))))
          (local.set $gs (v128.const i32x4 0 0 0 0))
          (local.set $k (i32.const 0))
          (local.set $np (i32.add (local.get $np) (i32.const 2)))))
      (local.set $w (i32.add (local.get $w) (i32.const 64)))
      (local.set $x (i32.add (local.get $x) (i32.const 64)))
      (local.set $x1 (i32.add (local.get $x1) (i32.const 64)))
      (local.set $x2 (i32.add (local.get $x2) (i32.const 64)))
      (local.set $x3 (i32.add (local.get $x3) (i32.const 64)))
      (local.set $s (i32.add (local.get $s) (i32.shl (global.get $CHUNK) (i32.const 2))))
      (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
    (local.get $acc))

  ;; A snapshot block: a header of SN_HEADER bytes (fields SN_*: position, sink, head pooling on, cells
  ;; pooled), then what $snap_walk moves. It holds exactly what the session has written so far, so it is small
  ;; for a short prefix (a tools prefix of 400 positions at base: about 5.6 MB of KV rows).

  ;; Moves n bytes between the engine's state at `state` and the snapshot at `at`: dir 0 saves
  ;; (state -> snapshot), 1 restores (snapshot -> state), 2 only measures. Returns at + n.
  (func $snap_move (param $state i32) (param $at i32) (param $n i32) (param $dir i32) (result i32)
    (if (i32.eqz (local.get $dir)) (then (memory.copy (local.get $at) (local.get $state) (local.get $n))))
    (if (i32.eq (local.get $dir) (i32.const 1)) (then (memory.copy (local.get $state) (local.get $at) (local.get $n))))
    (i32.add (local.get $at) (local.get $n)))

  ;; $snap_move of the first n bytes of each of `rows` rows, `stride` bytes apart from `base`.
  (func $snap_rows (param $base i32) (param $rows i32) (param $stride i32) (param $n i32) (param $at i32) (param $dir i32) (result i32)
    (local $r i32)
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $at (call $snap_move (i32.add (local.get $base) (i32.mul (local.get $r) (local.get $stride)))
                                      (local.get $at) (local.get $n) (local.get $dir)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $each)))
    (local.get $at))

  ;; The session after the header, in order: the token history [0, position); of the KV cache the
  ;; slots written so far, [0, min(position, slots)), of every key, key-scale, value and value-scale
  ;; row; the engram ring; each probe head's running max, sum and weighted sum; the logits buffer.
  ;; dir as $snap_move; returns the end (with at = 0 and dir 2: the size after the header).
  (func $snap_walk (param $at i32) (param $dir i32) (result i32)
    (local $n i32) (local $slots i32) (local $hd i32) (local $nb i32) (local $rows i32) (local $h i32)
    (local $desc i32) (local $pr i32)
    (local.set $slots (i32.load (global.get $KV_SLOTS)))
    (local.set $n (select (i32.load (global.get $POS)) (local.get $slots) (i32.lt_u (i32.load (global.get $POS)) (local.get $slots))))
    (local.set $hd (call $g (global.get $G_HD)))
    (local.set $nb (i32.shr_u (local.get $hd) (i32.const 5)))
    (local.set $rows (i32.mul (call $g (global.get $G_L)) (call $g (global.get $G_KV))))  ;; (layer, kv head) pairs
    (local.set $at (call $snap_move (i32.load (global.get $P_HIST)) (local.get $at) (i32.shl (i32.load (global.get $POS)) (i32.const 2)) (local.get $dir)))
    (local.set $at (call $snap_rows (i32.load (global.get $P_KQ)) (i32.mul (local.get $rows) (local.get $hd))
      (local.get $slots) (local.get $n) (local.get $at) (local.get $dir)))
    (local.set $at (call $snap_rows (i32.load (global.get $P_KS)) (i32.mul (local.get $rows) (local.get $nb))
      (i32.shl (local.get $slots) (i32.const 2)) (i32.shl (local.get $n) (i32.const 2)) (local.get $at) (local.get $dir)))
    (local.set $at (call $snap_rows (i32.load (global.get $P_VQ)) (local.get $rows)
      (i32.mul (local.get $slots) (local.get $hd)) (i32.mul (local.get $n) (local.get $hd)) (local.get $at) (local.get $dir)))
    (local.set $at (call $snap_rows (i32.load (global.get $P_VS)) (local.get $rows)
      (i32.shl (i32.mul (local.get $slots) (local.get $nb)) (i32.const 2)) (i32.shl (i32.mul (local.get $n) (local.get $nb)) (i32.const 2))
      (local.get $at) (local.get $dir)))
    (local.set $at (call $snap_move (i32.load (global.get $P_ERING)) (local.get $at)
      (i32.shl (i32.mul (i32.mul (call $g (global.get $G_NSITE)) (i32.load (global.get $RING_ROWS))) (call $g (global.get $G_D))) (i32.const 2))
      (local.get $dir)))
    (block $heads_done (loop $heads
      (br_if $heads_done (i32.ge_u (local.get $h) (i32.load (global.get $NHEADS))))
      (local.set $desc (call $head (local.get $h)))
      (local.set $pr (i32.shl (call $h_probes (local.get $desc)) (i32.const 2)))  ;; P probes, in bytes of f32
      (local.set $at (call $snap_move (call $h_run_max (local.get $desc)) (local.get $at) (local.get $pr) (local.get $dir)))
      (local.set $at (call $snap_move (call $h_run_sum (local.get $desc)) (local.get $at) (local.get $pr) (local.get $dir)))
      (local.set $at (call $snap_move (call $h_run_acc (local.get $desc)) (local.get $at)
        (i32.mul (local.get $pr) (call $g (global.get $G_D))) (local.get $dir)))
      (local.set $h (i32.add (local.get $h) (i32.const 1)))
      (br $heads)))
    (call $snap_move (i32.load (global.get $P_LOGITS)) (local.get $at) (i32.shl (call $g (global.get $G_VOCAB)) (i32.const 2)) (local.get $dir)))

  ;; snapshot_save(): saves the session as it is now into the one snapshot slot (replacing the last
  ;; one; a larger one than the slot holds gets a new block). 0, or ERR_NOT_LOADED, ERR_MEMORY (the
  ;; previous snapshot is kept).
  (func (export "snapshot_save") (result i32)
    (local $size i32) (local $blk i32) (local $r i32)
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (global.get $ERR_NOT_LOADED))))
    (if (i32.eqz (i32.load (global.get $KV_CAP)))
      (then (if (local.tee $r (call $session_reset_i (i32.const 0))) (then (return (local.get $r))))))
    (local.set $size (call $snap_walk (global.get $SN_HEADER) (i32.const 2)))
    (if (i32.gt_u (local.get $size) (i32.load (global.get $SNAP_CAP)))
      (then
        (if (i32.eqz (local.tee $blk (call $alloc (local.get $size)))) (then (return (global.get $ERR_MEMORY))))
        (i32.store (global.get $P_SNAP) (local.get $blk))
        (i32.store (global.get $SNAP_CAP) (local.get $size))))
    (local.set $blk (i32.load (global.get $P_SNAP)))
    (i32.store (i32.add (local.get $blk) (global.get $SN_POS)) (i32.load (global.get $POS)))
    (i32.store (i32.add (local.get $blk) (global.get $SN_SINK)) (i32.load (global.get $SINK)))
    (i32.store (i32.add (local.get $blk) (global.get $SN_HEADS_ON)) (i32.load (global.get $HEADS_ON)))
    (i32.store (i32.add (local.get $blk) (global.get $SN_POOLED)) (i32.load (global.get $POOLED)))
    (drop (call $snap_walk (i32.add (local.get $blk) (global.get $SN_HEADER)) (i32.const 0)))
    (i32.const 0))

  ;; snapshot_restore(): the session becomes the one saved (a new session with the saved sink, then
  ;; every saved field); steps after it give exactly what the saved session's next steps gave. The
  ;; snapshot stays for another restore. 0, or ERR_NOT_LOADED, ERR_NO_SNAPSHOT, ERR_MEMORY.
  (func (export "snapshot_restore") (result i32)
    (local $blk i32) (local $r i32)
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (global.get $ERR_NOT_LOADED))))
    (if (i32.eqz (local.tee $blk (i32.load (global.get $P_SNAP)))) (then (return (global.get $ERR_NO_SNAPSHOT))))
    (if (local.tee $r (call $session_reset_i (i32.load (i32.add (local.get $blk) (global.get $SN_SINK))))) (then (return (local.get $r))))
    (i32.store (global.get $POS) (i32.load (i32.add (local.get $blk) (global.get $SN_POS))))
    (i32.store (global.get $HEADS_ON) (i32.load (i32.add (local.get $blk) (global.get $SN_HEADS_ON))))
    (i32.store (global.get $POOLED) (i32.load (i32.add (local.get $blk) (global.get $SN_POOLED))))
    (drop (call $snap_walk (i32.add (local.get $blk) (global.get $SN_HEADER)) (i32.const 1)))
    (i32.const 0))

  ;; snapshot_position(): the position of the saved snapshot, or -1 when there is none.
  (func (export "snapshot_position") (result i32)
    (if (result i32) (i32.load (global.get $P_SNAP))
      (then (i32.load (i32.add (i32.load (global.get $P_SNAP)) (global.get $SN_POS))))
      (else (i32.const -1))))

  ;; ------------------------------------------------------------------------------------------
  ;; Sampler: greedy, temperature, top-k, min-p, top-p, repetition penalty; splitmix64 generator
  ;; ------------------------------------------------------------------------------------------

  ;; Sets the sampling options (temperature <= 0: greedy; topK 0, topP >= 1, minP 0, rep 1: off;
  ;; repWindow 0: the penalty looks at the whole session).
  (func (export "sampler") (param $temp f32) (param $topk i32) (param $topp f32) (param $minp f32) (param $rep f32) (param $repn i32)
    (f32.store (global.get $S_TEMP) (local.get $temp))
    (i32.store (global.get $S_TOPK) (local.get $topk))
    (f32.store (global.get $S_TOPP) (local.get $topp))
    (f32.store (global.get $S_MINP) (local.get $minp))
    (f32.store (global.get $S_REP) (local.get $rep))
    (i32.store (global.get $S_REPN) (local.get $repn)))

  ;; Seeds the generator with the 64-bit seed hi:lo.
  (func (export "seed") (param $lo i32) (param $hi i32)
    (i64.store (global.get $S_RNG) (i64.or (i64.extend_i32_u (local.get $lo)) (i64.shl (i64.extend_i32_u (local.get $hi)) (i64.const 32)))))

  ;; splitmix64: the next uniform f64 in [0, 1) (53 bits).
  (func $uniform (export "uniform") (result f64)
    (local $z i64)
    (local.set $z (i64.add (i64.load (global.get $S_RNG)) (i64.const 0x9E3779B97F4A7C15)))
    (i64.store (global.get $S_RNG) (local.get $z))
    (local.set $z (i64.mul (i64.xor (local.get $z) (i64.shr_u (local.get $z) (i64.const 30))) (i64.const 0xBF58476D1CE4E5B9)))
    (local.set $z (i64.mul (i64.xor (local.get $z) (i64.shr_u (local.get $z) (i64.const 27))) (i64.const 0x94D049BB133111EB)))
    (local.set $z (i64.xor (local.get $z) (i64.shr_u (local.get $z) (i64.const 31))))
    (f64.mul (f64.convert_i64_u (i64.shr_u (local.get $z) (i64.const 11))) (f64.const 0x1p-53)))

  ;; Repetition penalty on the working logits (PROB): each distinct token of the window once, divided
  ;; by the penalty when positive, multiplied when not.
  (func $penalize
    (local $rep f32) (local $b i32) (local $p i32) (local $t i32) (local $q i32) (local $v f32)
    (local.set $rep (f32.load (global.get $S_REP)))
    (if (i32.or (f32.eq (local.get $rep) (f32.const 1)) (f32.le (local.get $rep) (f32.const 0))) (then (return)))
    (local.set $p (i32.load (global.get $POS)))
    (if (i32.load (global.get $S_REPN))
      (then (if (i32.gt_u (local.get $p) (i32.load (global.get $S_REPN)))
        (then (local.set $b (i32.sub (local.get $p) (i32.load (global.get $S_REPN))))))))
    (call $zero (i32.load (global.get $P_SORT)) (i32.shl (call $g (global.get $G_VOCAB)) (i32.const 2)))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $b) (local.get $p)))
      (local.set $t (i32.load (i32.add (i32.load (global.get $P_HIST)) (i32.shl (local.get $b) (i32.const 2)))))
      (local.set $q (i32.add (i32.load (global.get $P_SORT)) (i32.shl (local.get $t) (i32.const 2))))
      (if (i32.eqz (i32.load (local.get $q)))
        (then
          (i32.store (local.get $q) (i32.const 1))
          (local.set $q (i32.add (i32.load (global.get $P_PROB)) (i32.shl (local.get $t) (i32.const 2))))
          (local.set $v (f32.load (local.get $q)))
          (f32.store (local.get $q) (select (f32.div (local.get $v) (local.get $rep)) (f32.mul (local.get $v) (local.get $rep))
                                            (f32.gt (local.get $v) (f32.const 0))))))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $l))))

  ;; 1 if candidate a ranks before b: higher weight (PROB), lower id on ties.
  (func $before (param $a i32) (param $b i32) (result i32)
    (local $la f32) (local $lb f32)
    (local.set $la (f32.load (i32.add (i32.load (global.get $P_PROB)) (i32.shl (local.get $a) (i32.const 2)))))
    (local.set $lb (f32.load (i32.add (i32.load (global.get $P_PROB)) (i32.shl (local.get $b) (i32.const 2)))))
    (i32.or (f32.gt (local.get $la) (local.get $lb))
            (i32.and (f32.eq (local.get $la) (local.get $lb)) (i32.lt_u (local.get $a) (local.get $b)))))

  ;; Sift-down for the heap of ids at SORT (heap order: the LAST-ranked id at the root).
  (func $sift (param $i i32) (param $n i32)
    (local $c i32) (local $s i32) (local $t i32) (local $a i32)
    (local.set $s (i32.load (global.get $P_SORT)))
    (block $done (loop $down
      (local.set $c (i32.add (i32.shl (local.get $i) (i32.const 1)) (i32.const 1)))
      (br_if $done (i32.ge_u (local.get $c) (local.get $n)))
      (if (i32.lt_u (i32.add (local.get $c) (i32.const 1)) (local.get $n))
        (then (if (call $before (i32.load (i32.add (local.get $s) (i32.shl (local.get $c) (i32.const 2))))
                                (i32.load (i32.add (local.get $s) (i32.shl (i32.add (local.get $c) (i32.const 1)) (i32.const 2)))))
                (then (local.set $c (i32.add (local.get $c) (i32.const 1)))))))
      (local.set $a (i32.add (local.get $s) (i32.shl (local.get $i) (i32.const 2))))
      (br_if $done (i32.eqz (call $before (i32.load (local.get $a)) (i32.load (i32.add (local.get $s) (i32.shl (local.get $c) (i32.const 2)))))))
      (local.set $t (i32.load (local.get $a)))
      (i32.store (local.get $a) (i32.load (i32.add (local.get $s) (i32.shl (local.get $c) (i32.const 2)))))
      (i32.store (i32.add (local.get $s) (i32.shl (local.get $c) (i32.const 2))) (local.get $t))
      (local.set $i (local.get $c))
      (br $down))))

  ;; Heap sort of the n candidate ids at SORT by rank (SORT[0] = best).
  (func $rank (param $n i32)
    (local $i i32) (local $s i32) (local $t i32)
    (local.set $s (i32.load (global.get $P_SORT)))
    (local.set $i (i32.shr_u (local.get $n) (i32.const 1)))
    (loop $build
      (if (i32.gt_u (local.get $i) (i32.const 0))
        (then (local.set $i (i32.sub (local.get $i) (i32.const 1)))
              (call $sift (local.get $i) (local.get $n))
              (br $build))))
    (local.set $i (local.get $n))
    (loop $pop
      (if (i32.gt_u (local.get $i) (i32.const 1))
        (then
          (local.set $i (i32.sub (local.get $i) (i32.const 1)))
          (local.set $t (i32.load (local.get $s)))
          (i32.store (local.get $s) (i32.load (i32.add (local.get $s) (i32.shl (local.get $i) (i32.const 2)))))
          (i32.store (i32.add (local.get $s) (i32.shl (local.get $i) (i32.const 2))) (local.get $t))
          (call $sift (i32.const 0) (local.get $i))
          (br $pop)))))

  ;; sample(): the next token from the logits of the last step (*ADDR_LOGITS), no mask. The id, or
  ;; -ERR_NOT_LOADED.
  (func $sample (export "sample") (result i32) (call $draw (i32.const 0)))

  ;; sample_masked(): the same, drawing only tokens the mask at *ADDR_MASK allows. The id, or
  ;; -ERR_MASK_EMPTY when the mask allows none of the vocabulary, or -ERR_NOT_LOADED.
  (func (export "sample_masked") (result i32) (call $draw (i32.load (global.get $P_MASK))))

  ;; The sampler (docs/engine.md "Sampler", numerics.md), over the tokens `mask` allows (0: all): the
  ;; repetition penalty; the greedy choice; when the temperature is > 0, weights w = expf((l - lmax)/T),
  ;; candidates (the greedy choice and the tokens passing min-p), top-k (the k best, by weight then
  ;; id), top-p (the shortest prefix in rank order reaching topP of the weight), and one draw of the
  ;; splitmix64 generator over the candidates in order (rank order when ranked, else id order).
  (func $draw (param $mask i32) (result i32)
    (local $best i32) (local $n i32) (local $k i32) (local $cutk i32)
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (i32.sub (i32.const 0) (global.get $ERR_NOT_LOADED)))))
    (memory.copy (i32.load (global.get $P_PROB)) (i32.load (global.get $P_LOGITS)) (i32.shl (call $g (global.get $G_VOCAB)) (i32.const 2)))
    (call $penalize)
    (local.set $best (call $greedy (local.get $mask)))
    (if (i32.lt_s (local.get $best) (i32.const 0)) (then (return (i32.sub (i32.const 0) (global.get $ERR_MASK_EMPTY)))))
    (if (i32.eqz (f32.gt (f32.load (global.get $S_TEMP)) (f32.const 0))) (then (return (local.get $best))))
    (local.set $n (call $candidates (local.get $mask) (local.get $best)))
    ;; rank (by weight, then id) when top-k or top-p needs it; top-k keeps the best k
    (local.set $k (i32.load (global.get $S_TOPK)))
    (local.set $cutk (i32.and (i32.gt_s (local.get $k) (i32.const 0)) (i32.lt_u (local.get $k) (local.get $n))))
    (if (i32.or (local.get $cutk) (f32.lt (f32.load (global.get $S_TOPP)) (f32.const 1)))
      (then
        (if (local.get $cutk) (then (call $keep_best (local.get $n) (local.get $k)) (local.set $n (local.get $k))))
        (call $rank (local.get $n))))
    (if (f32.lt (f32.load (global.get $S_TOPP)) (f32.const 1)) (then (local.set $n (call $top_p (local.get $n)))))
    (call $pick (local.get $n)))

  ;; 1 if token i may be drawn: there is no mask (0), or bit i mod 32 of u32 word i / 32 of it is set.
  (func $allowed (param $mask i32) (param $i i32) (result i32)
    (if (result i32) (local.get $mask)
      (then (i32.and (i32.shr_u (i32.load (i32.add (local.get $mask) (i32.shl (i32.shr_u (local.get $i) (i32.const 5)) (i32.const 2))))
                                (local.get $i))
                     (i32.const 1)))
      (else (i32.const 1))))

  ;; The greedy choice among the allowed tokens of the working logits (PROB): the highest, the lowest
  ;; id on ties; the lowest allowed id when no allowed logit is above -inf; -1 when none is allowed.
  (func $greedy (param $mask i32) (result i32)
    (local $V i32) (local $i i32) (local $first i32) (local $best i32) (local $bv f32) (local $v f32) (local $pr i32)
    (local.set $V (call $g (global.get $G_VOCAB)))
    (local.set $pr (i32.load (global.get $P_PROB)))
    (local.set $first (i32.const -1))
    (local.set $best (i32.const -1))
    (local.set $bv (f32.const -inf))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $i) (local.get $V)))
      (if (call $allowed (local.get $mask) (local.get $i))
        (then
          (if (i32.lt_s (local.get $first) (i32.const 0)) (then (local.set $first (local.get $i))))
          (local.set $v (f32.load (i32.add (local.get $pr) (i32.shl (local.get $i) (i32.const 2)))))
          (if (f32.gt (local.get $v) (local.get $bv)) (then (local.set $bv (local.get $v)) (local.set $best (local.get $i))))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $each)))
    (select (local.get $first) (local.get $best) (i32.lt_s (local.get $best) (i32.const 0))))

  ;; Weights w = expf((l - lmax) / T) of the allowed tokens in place of their working logits (PROB),
  ;; lmax = the greedy choice's logit; the candidates at SORT, in id order: the greedy choice, and every
  ;; allowed token whose weight is not below min-p and is above 0. Returns their count (>= 1).
  (func $candidates (param $mask i32) (param $best i32) (result i32)
    (local $V i32) (local $i i32) (local $n i32) (local $at i32) (local $w f32) (local $lmax f32) (local $t f32)
    (local.set $V (call $g (global.get $G_VOCAB)))
    (local.set $lmax (f32.load (i32.add (i32.load (global.get $P_PROB)) (i32.shl (local.get $best) (i32.const 2)))))
    (local.set $t (f32.load (global.get $S_TEMP)))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $i) (local.get $V)))
      (if (call $allowed (local.get $mask) (local.get $i))
        (then
          (local.set $at (i32.add (i32.load (global.get $P_PROB)) (i32.shl (local.get $i) (i32.const 2))))
          (local.set $w (call $expf (f32.div (f32.sub (f32.load (local.get $at)) (local.get $lmax)) (local.get $t))))
          (f32.store (local.get $at) (local.get $w))
          (if (i32.or (i32.eq (local.get $i) (local.get $best))
                      (i32.and (i32.eqz (f32.lt (local.get $w) (f32.load (global.get $S_MINP)))) (f32.gt (local.get $w) (f32.const 0))))
            (then (i32.store (i32.add (i32.load (global.get $P_SORT)) (i32.shl (local.get $n) (i32.const 2))) (local.get $i))
                  (local.set $n (i32.add (local.get $n) (i32.const 1)))))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $each)))
    (local.get $n))

  ;; Top-p over the n ranked candidates: the count of the shortest prefix whose f64 weight sum reaches
  ;; topP x the sum of all n (at least 1).
  (func $top_p (param $n i32) (result i32)
    (local $target f64) (local $cum f64) (local $i i32)
    (local.set $target (f64.mul (f64.promote_f32 (f32.load (global.get $S_TOPP))) (call $weight_sum (local.get $n))))
    (block $cut (loop $each
      (local.set $cum (f64.add (local.get $cum) (f64.promote_f32 (call $weight_at (local.get $i)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $cut (f64.ge (local.get $cum) (local.get $target)))
      (br_if $each (i32.lt_u (local.get $i) (local.get $n)))))
    (local.get $i))

  ;; One draw u in [0, 1) over the n candidates in order: the first whose cumulative f64 weight passes
  ;; u x the total (the last one if rounding leaves none).
  (func $pick (param $n i32) (result i32)
    (local $r f64) (local $cum f64) (local $i i32)
    (local.set $r (f64.mul (call $uniform) (call $weight_sum (local.get $n))))
    (loop $each
      (local.set $cum (f64.add (local.get $cum) (f64.promote_f32 (call $weight_at (local.get $i)))))
      (if (f64.lt (local.get $r) (local.get $cum)) (then (return (i32.load (i32.add (i32.load (global.get $P_SORT)) (i32.shl (local.get $i) (i32.const 2)))))))
      (br_if $each (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (i32.load (i32.add (i32.load (global.get $P_SORT)) (i32.shl (i32.sub (local.get $n) (i32.const 1)) (i32.const 2)))))

  ;; logprob(token): log p(token) under the softmax of the last step's logits at temperature 1, with no
  ;; mask and no penalty (docs/numerics.md "Log-probability"): lmax = the largest logit; S = f32(sum of
  ;; f64(expf(l_i - lmax)) in id order); (l_token - lmax) - logf(S). NaN for a token past the vocabulary
  ;; or before load.
  (func (export "logprob") (param $tok i32) (result f32)
    (local $V i32) (local $l i32) (local $i i32) (local $mx f32) (local $v f32) (local $sum f64)
    (local.set $V (call $g (global.get $G_VOCAB)))
    (if (i32.or (i32.eqz (i32.load (global.get $LOADED))) (i32.ge_u (local.get $tok) (local.get $V)))
      (then (return (f32.const nan))))
    (local.set $l (i32.load (global.get $P_LOGITS)))
    (local.set $mx (f32.const -inf))
    (loop $max
      (local.set $v (f32.load (i32.add (local.get $l) (i32.shl (local.get $i) (i32.const 2)))))
      (if (f32.gt (local.get $v) (local.get $mx)) (then (local.set $mx (local.get $v))))
      (br_if $max (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $V))))
    (local.set $i (i32.const 0))
    (loop $sum_
      (local.set $sum (f64.add (local.get $sum) (f64.promote_f32 (call $expf (f32.sub
        (f32.load (i32.add (local.get $l) (i32.shl (local.get $i) (i32.const 2)))) (local.get $mx))))))
      (br_if $sum_ (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $V))))
    (f32.sub (f32.sub (f32.load (i32.add (local.get $l) (i32.shl (local.get $tok) (i32.const 2)))) (local.get $mx))
             (call $logf (f32.demote_f64 (local.get $sum)))))

  ;; Keeps the k best of the n candidates at SORT in SORT[0..k): a heap whose root is the worst kept.
  (func $keep_best (param $n i32) (param $k i32)
    (local $i i32) (local $s i32)
    (local.set $s (i32.load (global.get $P_SORT)))
    (local.set $i (i32.shr_u (local.get $k) (i32.const 1)))
    (loop $build
      (if (i32.gt_u (local.get $i) (i32.const 0))
        (then (local.set $i (i32.sub (local.get $i) (i32.const 1)))
              (call $sift (local.get $i) (local.get $k))
              (br $build))))
    (local.set $i (local.get $k))
    (block $done (loop $rest
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (if (call $before (i32.load (i32.add (local.get $s) (i32.shl (local.get $i) (i32.const 2)))) (i32.load (local.get $s)))
        (then (i32.store (local.get $s) (i32.load (i32.add (local.get $s) (i32.shl (local.get $i) (i32.const 2)))))
              (call $sift (i32.const 0) (local.get $k))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $rest))))

  ;; Weight of the candidate ranked i.
  (func $weight_at (param $i i32) (result f32)
    (f32.load (i32.add (i32.load (global.get $P_PROB))
      (i32.shl (i32.load (i32.add (i32.load (global.get $P_SORT)) (i32.shl (local.get $i) (i32.const 2)))) (i32.const 2)))))
  ;; Sum of the weights of the first n candidates (f64, in order).
  (func $weight_sum (param $n i32) (result f64)
    (local $i i32) (local $sum f64)
    (loop $l
      (local.set $sum (f64.add (local.get $sum) (f64.promote_f32 (call $weight_at (local.get $i)))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (local.get $sum))

  ;; ------------------------------------------------------------------------------------------
  ;; Probe heads: streaming-softmax pooling of every cell of the session, then each head's output
  ;; (docs/model.md "Probe heads", numerics.md "Probe heads"; host/heads.cpp in the same order)
  ;; ------------------------------------------------------------------------------------------

  ;; Descriptor of probe head h (the table at the top of the module).
  (func $head (param $h i32) (result i32)
    (i32.add (i32.load (global.get $P_HEADS)) (i32.mul (local.get $h) (global.get $H_SIZE))))

  ;; The most probes a head has (CONTRASTIVE_PROBES or CONFIDENCE_PROBES): what the scratch shared by
  ;; all heads (P_HSCORE, P_POOLV) is sized for.
  (func $max_probes (result i32)
    (select (global.get $CONTRASTIVE_PROBES) (global.get $CONFIDENCE_PROBES)
            (i32.gt_u (global.get $CONTRASTIVE_PROBES) (global.get $CONFIDENCE_PROBES))))

  ;; At load: the scratch of the pooling and one descriptor per head, with its probes transposed and
  ;; its running state. 0, or ERR_MEMORY. No heads: nothing is allocated.
  (func $alloc_heads (result i32)
    (local $n i32) (local $h i32) (local $desc i32) (local $rec i32) (local $p i32) (local $d i32) (local $ok i32)
    (i32.store (global.get $P_HEADS) (i32.const 0))
    (local.set $n (i32.load (global.get $NHEADS)))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (local.set $d (i32.shl (call $g (global.get $G_D)) (i32.const 2)))
    (local.set $ok (i32.ne (call $buf (global.get $P_HEADS) (i32.mul (local.get $n) (global.get $H_SIZE))) (i32.const 0)))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_CELL) (local.get $d)) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_HSCORE) (i32.shl (call $max_probes) (i32.const 2))) (i32.const 0))))
    (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (global.get $P_POOLV) (i32.mul (call $max_probes) (local.get $d))) (i32.const 0))))
    (loop $each
      (local.set $desc (call $head (local.get $h)))
      ;; head h's first record: after the manifest (record CORE), HEAD_RECORDS per head
      (local.set $rec (i32.add (i32.add (i32.load (global.get $CORE)) (i32.const 1)) (i32.mul (local.get $h) (global.get $HEAD_RECORDS))))
      (local.set $p (call $d_rows (call $rec (i32.add (local.get $rec) (global.get $HR_PROBES)))))
      (i32.store (i32.add (local.get $desc) (global.get $H_CODE)) (call $head_code (local.get $h)))
      (i32.store (i32.add (local.get $desc) (global.get $H_PROBES)) (local.get $p))
      (i32.store (i32.add (local.get $desc) (global.get $H_OUTPUTS))
        (call $d_rows (call $rec (i32.add (local.get $rec) (global.get $HR_BIAS)))))
      (i32.store (i32.add (local.get $desc) (global.get $H_RECORD)) (local.get $rec))
      (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (i32.add (local.get $desc) (global.get $H_PROBES_T)) (i32.mul (local.get $d) (local.get $p))) (i32.const 0))))
      (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (i32.add (local.get $desc) (global.get $H_RUN_MAX)) (i32.shl (local.get $p) (i32.const 2))) (i32.const 0))))
      (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (i32.add (local.get $desc) (global.get $H_RUN_SUM)) (i32.shl (local.get $p) (i32.const 2))) (i32.const 0))))
      (local.set $ok (i32.and (local.get $ok) (i32.ne (call $buf (i32.add (local.get $desc) (global.get $H_RUN_ACC)) (i32.mul (local.get $d) (local.get $p))) (i32.const 0))))
      (if (i32.eqz (local.get $ok)) (then (return (global.get $ERR_MEMORY))))
      (call $transpose_probes (local.get $desc))
      (br_if $each (i32.lt_u (local.tee $h (i32.add (local.get $h) (i32.const 1))) (local.get $n))))
    (i32.const 0))

  ;; The head's probes [P][d] (widened from fp16 by load) copied to [d][P]: lane j of vector q of a
  ;; column c is probe 4q + j, so one vector accumulates the dots of four probes.
  (func $transpose_probes (param $desc i32)
    (local $src i32) (local $dst i32) (local $p i32) (local $d i32) (local $k i32) (local $c i32)
    (local.set $src (call $fdata (call $h_rec (local.get $desc) (global.get $HR_PROBES))))
    (local.set $dst (call $h_probes_t (local.get $desc)))
    (local.set $p (call $h_probes (local.get $desc)))
    (local.set $d (call $g (global.get $G_D)))
    (loop $probes
      (local.set $c (i32.const 0))
      (loop $cols
        (f32.store (i32.add (local.get $dst) (i32.shl (i32.add (i32.mul (local.get $c) (local.get $p)) (local.get $k)) (i32.const 2)))
          (f32.load (i32.add (local.get $src) (i32.shl (i32.add (i32.mul (local.get $k) (local.get $d)) (local.get $c)) (i32.const 2)))))
        (br_if $cols (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (local.get $d))))
      (br_if $probes (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $p)))))

  ;; Empties every head's pooling: max -inf, sum 0, weighted sum 0; no cell pooled.
  (func $heads_clear
    (local $h i32) (local $desc i32) (local $k i32)
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $h) (i32.load (global.get $NHEADS))))
      (local.set $desc (call $head (local.get $h)))
      (local.set $k (i32.const 0))
      (loop $probes
        (f32.store (i32.add (call $h_run_max (local.get $desc)) (i32.shl (local.get $k) (i32.const 2))) (f32.const -inf))
        (f32.store (i32.add (call $h_run_sum (local.get $desc)) (i32.shl (local.get $k) (i32.const 2))) (f32.const 0))
        (br_if $probes (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (call $h_probes (local.get $desc)))))
      (call $zero (call $h_run_acc (local.get $desc))
        (i32.shl (i32.mul (call $h_probes (local.get $desc)) (call $g (global.get $G_D))) (i32.const 2)))
      (local.set $h (i32.add (local.get $h) (i32.const 1)))
      (br $each)))
    (i32.store (global.get $POOLED) (i32.const 0)))

  ;; heads_begin(): empties the pooling and has every later step feed it its cells, until heads_end or
  ;; the next session_reset. 0, or ERR_NOT_LOADED, ERR_NO_HEAD (the archive has no probe heads), or
  ;; the error of the session_reset that a first step would do anyway.
  (func (export "heads_begin") (result i32)
    (local $r i32)
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (global.get $ERR_NOT_LOADED))))
    (if (i32.eqz (i32.load (global.get $NHEADS))) (then (return (global.get $ERR_NO_HEAD))))
    (if (i32.eqz (i32.load (global.get $KV_CAP)))
      (then (if (local.tee $r (call $session_reset_i (i32.const 0))) (then (return (local.get $r))))))
    (call $heads_clear)
    (i32.store (global.get $HEADS_ON) (i32.const 1))
    (i32.const 0))

  ;; heads_end(): later steps no longer feed the pooling; what it holds stays readable. Always 0.
  (func (export "heads_end") (result i32)
    (i32.store (global.get $HEADS_ON) (i32.const 0))
    (i32.const 0))

  ;; Pools one cell (d f32 at x) into every probe of every head.
  (func $pool_cell (param $x i32)
    (local $h i32)
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $h) (i32.load (global.get $NHEADS))))
      (call $pool_head (call $head (local.get $h)) (local.get $x))
      (local.set $h (i32.add (local.get $h) (i32.const 1)))
      (br $each)))
    (i32.store (global.get $POOLED) (i32.add (i32.load (global.get $POOLED)) (i32.const 1))))

  ;; The cell after a layer: the lane mean (before final_norm), pooled.
  (func $pool_layer
    (call $lane_mean (i32.load (global.get $P_CELL)))
    (call $pool_cell (i32.load (global.get $P_CELL))))

  ;; One head, one cell: the scores t_k = (x . probe_k) / sqrt(d) of its P probes, four per vector
  ;; (each lane the sequential f32 sum over c = 0..d-1 of one probe), then each probe's update.
  (func $pool_head (param $desc i32) (param $x i32)
    (local $p i32) (local $d i32) (local $pt i32) (local $q i32) (local $c i32) (local $acc v128) (local $k i32)
    (local.set $p (call $h_probes (local.get $desc)))
    (local.set $d (call $g (global.get $G_D)))
    (local.set $pt (call $h_probes_t (local.get $desc)))
    (loop $groups
      (local.set $acc (v128.const i32x4 0 0 0 0))
      (local.set $c (i32.const 0))
      (loop $dot
        (local.set $acc (f32x4.add (local.get $acc)
          (f32x4.mul (f32x4.splat (f32.load (i32.add (local.get $x) (i32.shl (local.get $c) (i32.const 2)))))
                     (v128.load (i32.add (local.get $pt) (i32.shl (i32.add (i32.mul (local.get $c) (local.get $p)) (local.get $q)) (i32.const 2)))))))
        (br_if $dot (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (local.get $d))))
      (v128.store (i32.add (i32.load (global.get $P_HSCORE)) (i32.shl (local.get $q) (i32.const 2)))
        (f32x4.div (local.get $acc) (f32x4.splat (f32.load (global.get $SQRTD)))))
      (br_if $groups (i32.lt_u (local.tee $q (i32.add (local.get $q) (i32.const 4))) (local.get $p))))
    (loop $probes
      (call $pool_probe (local.get $desc) (local.get $k)
        (f32.load (i32.add (i32.load (global.get $P_HSCORE)) (i32.shl (local.get $k) (i32.const 2)))) (local.get $x))
      (br_if $probes (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $p)))))

  ;; The streaming-softmax update of probe k with score t and cell x:
  ;;   t > max:   s = e^(max - t); sum = sum s + 1; acc = acc s + x; max = t
  ;;   otherwise: w = e^(t - max); sum = sum + w;   acc = acc + w x
  (func $pool_probe (param $desc i32) (param $k i32) (param $t f32) (param $x i32)
    (local $mp i32) (local $sp i32) (local $acc i32) (local $m f32) (local $w f32) (local $d i32)
    (local.set $d (call $g (global.get $G_D)))
    (local.set $mp (i32.add (call $h_run_max (local.get $desc)) (i32.shl (local.get $k) (i32.const 2))))
    (local.set $sp (i32.add (call $h_run_sum (local.get $desc)) (i32.shl (local.get $k) (i32.const 2))))
    (local.set $acc (i32.add (call $h_run_acc (local.get $desc)) (i32.shl (i32.mul (local.get $k) (local.get $d)) (i32.const 2))))
    (local.set $m (f32.load (local.get $mp)))
    (if (f32.gt (local.get $t) (local.get $m))
      (then
        (local.set $w (call $expf (f32.sub (local.get $m) (local.get $t))))
        (f32.store (local.get $sp) (f32.add (f32.mul (f32.load (local.get $sp)) (local.get $w)) (f32.const 1)))
        (call $scale_add (local.get $acc) (local.get $w) (local.get $x) (local.get $d))
        (f32.store (local.get $mp) (local.get $t)))
      (else
        (local.set $w (call $expf (f32.sub (local.get $t) (local.get $m))))
        (f32.store (local.get $sp) (f32.add (f32.load (local.get $sp)) (local.get $w)))
        (call $axpy (local.get $acc) (local.get $w) (local.get $x) (local.get $d)))))

  ;; y[0..n) = y * s + x (n a multiple of 4)
  (func $scale_add (param $y i32) (param $s f32) (param $x i32) (param $n i32)
    (local $sv v128) (local $i i32) (local $e i32)
    (local.set $sv (f32x4.splat (local.get $s)))
    (local.set $e (i32.shl (local.get $n) (i32.const 2)))
    (loop $l
      (v128.store (i32.add (local.get $y) (local.get $i))
        (f32x4.add (f32x4.mul (v128.load (i32.add (local.get $y) (local.get $i))) (local.get $sv))
                   (v128.load (i32.add (local.get $x) (local.get $i)))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $e)))))

  ;; head_code(h): 1 (contrastive) or 2 (confidence); 0 when there is no head h.
  (func (export "head_code") (param $h i32) (result i32)
    (if (i32.or (i32.eqz (i32.load (global.get $LOADED))) (i32.ge_u (local.get $h) (i32.load (global.get $NHEADS))))
      (then (return (i32.const 0))))
    (call $h_code (call $head (local.get $h))))

  ;; head_size(h): the floats head_output writes for head h (128 contrastive, 1 confidence); 0 when
  ;; there is no head h.
  (func (export "head_size") (param $h i32) (result i32)
    (if (i32.or (i32.eqz (i32.load (global.get $LOADED))) (i32.ge_u (local.get $h) (i32.load (global.get $NHEADS))))
      (then (return (i32.const 0))))
    (call $h_outputs (call $head (local.get $h))))

  ;; head_output(h, out): head h over every cell pooled since heads_begin, written as f32 at out:
  ;; pooled = acc / sum per probe, out = proj pooled + bias, L2-normalised for a contrastive head. The
  ;; float count, or -ERR_NOT_LOADED, -ERR_NO_HEAD (no head h), -ERR_NO_CELLS (nothing pooled).
  (func (export "head_output") (param $h i32) (param $out i32) (result i32)
    (local $desc i32)
    (if (i32.eqz (i32.load (global.get $LOADED))) (then (return (i32.sub (i32.const 0) (global.get $ERR_NOT_LOADED)))))
    (if (i32.ge_u (local.get $h) (i32.load (global.get $NHEADS))) (then (return (i32.sub (i32.const 0) (global.get $ERR_NO_HEAD)))))
    (if (i32.eqz (i32.load (global.get $POOLED))) (then (return (i32.sub (i32.const 0) (global.get $ERR_NO_CELLS)))))
    (local.set $desc (call $head (local.get $h)))
    (call $pooled (local.get $desc))
    (call $project (local.get $desc) (local.get $out))
    (if (i32.eq (call $h_code (local.get $desc)) (global.get $HEAD_CONTRASTIVE))
      (then (call $l2_normalize (local.get $out) (call $h_outputs (local.get $desc)))))
    (call $h_outputs (local.get $desc)))

  ;; POOLV = the head's pooled probes, probe-major: acc_k[c] / sum_k.
  (func $pooled (param $desc i32)
    (local $k i32) (local $c i32) (local $d i32) (local $sum f32) (local $src i32) (local $dst i32)
    (local.set $d (call $g (global.get $G_D)))
    (loop $probes
      (local.set $sum (f32.load (i32.add (call $h_run_sum (local.get $desc)) (i32.shl (local.get $k) (i32.const 2)))))
      (local.set $src (i32.add (call $h_run_acc (local.get $desc)) (i32.shl (i32.mul (local.get $k) (local.get $d)) (i32.const 2))))
      (local.set $dst (i32.add (i32.load (global.get $P_POOLV)) (i32.shl (i32.mul (local.get $k) (local.get $d)) (i32.const 2))))
      (local.set $c (i32.const 0))
      (loop $cols
        (f32.store (i32.add (local.get $dst) (local.get $c)) (f32.div (f32.load (i32.add (local.get $src) (local.get $c))) (local.get $sum)))
        (br_if $cols (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 4))) (i32.shl (local.get $d) (i32.const 2)))))
      (br_if $probes (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (call $h_probes (local.get $desc))))))

  ;; out[o] = (sum over j of proj[o][j] POOLV[j], from 0 in j order) + bias[o], for each output o.
  (func $project (param $desc i32) (param $out i32)
    (local $in i32) (local $o i32) (local $j i32) (local $row i32) (local $acc f32) (local $v i32)
    (local.set $in (i32.mul (call $h_probes (local.get $desc)) (call $g (global.get $G_D))))
    (local.set $v (i32.load (global.get $P_POOLV)))
    (loop $outs
      (local.set $row (i32.add (call $fdata (call $h_rec (local.get $desc) (global.get $HR_PROJ)))
                               (i32.shl (i32.mul (local.get $o) (local.get $in)) (i32.const 2))))
      (local.set $acc (f32.const 0))
      (local.set $j (i32.const 0))
      (loop $dot
        (local.set $acc (f32.add (local.get $acc) (f32.mul (f32.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2))))
                                                           (f32.load (i32.add (local.get $v) (i32.shl (local.get $j) (i32.const 2)))))))
        (br_if $dot (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (local.get $in))))
      (f32.store (i32.add (local.get $out) (i32.shl (local.get $o) (i32.const 2)))
        (f32.add (local.get $acc) (f32.load (i32.add (call $fdata (call $h_rec (local.get $desc) (global.get $HR_BIAS)))
                                                     (i32.shl (local.get $o) (i32.const 2))))))
      (br_if $outs (i32.lt_u (local.tee $o (i32.add (local.get $o) (i32.const 1))) (call $h_outputs (local.get $desc))))))

  ;; x[0..n) /= sqrt(sum of x_i^2 + 1e-12) (the sum from 0 in order): the contrastive L2 norm.
  (func $l2_normalize (param $x i32) (param $n i32)
    (local $i i32) (local $ss f32) (local $v f32) (local $norm f32)
    (loop $sum
      (local.set $v (f32.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2)))))
      (local.set $ss (f32.add (local.get $ss) (f32.mul (local.get $v) (local.get $v))))
      (br_if $sum (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (local.set $norm (f32.sqrt (f32.add (local.get $ss) (f32.const 1e-12))))
    (local.set $i (i32.const 0))
    (loop $div
      (local.set $v (f32.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2)))))
      (f32.store (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2))) (f32.div (local.get $v) (local.get $norm)))
      (br_if $div (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n)))))

  ;; A scratch block of at least n bytes for the host's text and ids (grown on demand).
  (func $io_buffer (export "io_buffer") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.load (global.get $IO_CAP)))
      (then
        (i32.store (global.get $P_IO_BUF) (call $alloc (local.get $n)))
        (i32.store (global.get $IO_CAP) (select (local.get $n) (i32.const 0) (i32.ne (i32.load (global.get $P_IO_BUF)) (i32.const 0))))))
    (i32.load (global.get $P_IO_BUF)))

  ;; ------------------------------------------------------------------------------------------
  ;; Tokenizer (docs/tokenizer.md, host/tokenizer.cpp): the RAW blob read in place, SentencePiece BPE
  ;; ------------------------------------------------------------------------------------------

  ;; One UTF-8 step at p (n bytes left): the length of a well-formed character, or of the ill-formed
  ;; maximal subpart, plus 256 when well formed.
  (func $utf8_step (param $p i32) (param $n i32) (result i32)
    (local $lead i32) (local $trail i32) (local $lo i32) (local $hi i32) (local $k i32) (local $c i32)
    (local.set $lead (i32.load8_u (local.get $p)))
    (if (i32.lt_u (local.get $lead) (i32.const 0x80)) (then (return (i32.const 257))))
    (local.set $lo (i32.const 0x80))
    (local.set $hi (i32.const 0xBF))
    (if (i32.and (i32.ge_u (local.get $lead) (i32.const 0xC2)) (i32.le_u (local.get $lead) (i32.const 0xDF)))
      (then (local.set $trail (i32.const 1)))
    (else (if (i32.eq (local.get $lead) (i32.const 0xE0)) (then (local.set $trail (i32.const 2)) (local.set $lo (i32.const 0xA0)))
    (else (if (i32.eq (local.get $lead) (i32.const 0xED)) (then (local.set $trail (i32.const 2)) (local.set $hi (i32.const 0x9F)))
    (else (if (i32.and (i32.ge_u (local.get $lead) (i32.const 0xE1)) (i32.le_u (local.get $lead) (i32.const 0xEF))) (then (local.set $trail (i32.const 2)))
    (else (if (i32.eq (local.get $lead) (i32.const 0xF0)) (then (local.set $trail (i32.const 3)) (local.set $lo (i32.const 0x90)))
    (else (if (i32.and (i32.ge_u (local.get $lead) (i32.const 0xF1)) (i32.le_u (local.get $lead) (i32.const 0xF3))) (then (local.set $trail (i32.const 3)))
    (else (if (i32.eq (local.get $lead) (i32.const 0xF4)) (then (local.set $trail (i32.const 3)) (local.set $hi (i32.const 0x8F)))
    (else (return (i32.const 1))))))))))))))))
    (local.set $k (i32.const 1))
    (loop $t
      (if (i32.ge_u (local.get $k) (local.get $n)) (then (return (local.get $k))))
      (local.set $c (i32.load8_u (i32.add (local.get $p) (local.get $k))))
      (if (i32.or (i32.lt_u (local.get $c) (select (local.get $lo) (i32.const 0x80) (i32.eq (local.get $k) (i32.const 1))))
                  (i32.gt_u (local.get $c) (select (local.get $hi) (i32.const 0xBF) (i32.eq (local.get $k) (i32.const 1)))))
        (then (return (local.get $k))))
      (br_if $t (i32.le_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $trail))))
    (i32.add (i32.add (local.get $trail) (i32.const 1)) (i32.const 256)))

  ;; 1 if the n bytes at p are well-formed UTF-8.
  (func $utf8_valid (param $p i32) (param $n i32) (result i32)
    (local $s i32)
    (block $bad (loop $l
      (if (i32.gt_u (local.get $n) (i32.const 0))
        (then
          (local.set $s (call $utf8_step (local.get $p) (local.get $n)))
          (br_if $bad (i32.lt_u (local.get $s) (i32.const 256)))
          (local.set $s (i32.sub (local.get $s) (i32.const 256)))
          (local.set $p (i32.add (local.get $p) (local.get $s)))
          (local.set $n (i32.sub (local.get $n) (local.get $s)))
          (br $l))))
      (return (i32.const 1)))
    (i32.const 0))

  ;; FNV-1a over n bytes.
  (func $fnv (param $p i32) (param $n i32) (result i32)
    (local $h i32) (local $e i32)
    (local.set $h (i32.const 0x811C9DC5))
    (local.set $e (i32.add (local.get $p) (local.get $n)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $e)))
      (local.set $h (i32.mul (i32.xor (local.get $h) (i32.load8_u (local.get $p))) (i32.const 0x01000193)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $l)))
    (local.get $h))

  ;; 1 if the n bytes at a and b are equal.
  (func $bytes_eq (param $a i32) (param $b i32) (param $n i32) (result i32)
    (block $ne (loop $l
      (if (i32.gt_u (local.get $n) (i32.const 0))
        (then
          (br_if $ne (i32.ne (i32.load8_u (local.get $a)) (i32.load8_u (local.get $b))))
          (local.set $a (i32.add (local.get $a) (i32.const 1)))
          (local.set $b (i32.add (local.get $b) (i32.const 1)))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $l))))
      (return (i32.const 1)))
    (i32.const 0))

  ;; Piece table entry of id.
  (func $piece (param $id i32) (result i32)
    (i32.add (i32.load (global.get $P_TOK_PIECES)) (i32.mul (local.get $id) (global.get $PIECE_SIZE))))

  ;; Field getters of a piece table entry (PIECE_*).
  (func $piece_surface (param $e i32) (result i32) (i32.load (i32.add (local.get $e) (global.get $PIECE_SURFACE))))
  (func $piece_len (param $e i32) (result i32) (i32.load (i32.add (local.get $e) (global.get $PIECE_LEN))))
  (func $piece_score (param $e i32) (result f32) (f32.load (i32.add (local.get $e) (global.get $PIECE_SCORE))))
  (func $piece_type (param $e i32) (result i32) (i32.load (i32.add (local.get $e) (global.get $PIECE_TYPE))))

  ;; Hash slot holding the piece whose surface is the n bytes at p, or the empty slot where it goes.
  (func $tok_slot (param $p i32) (param $n i32) (result i32)
    (local $h i32) (local $slot i32) (local $v i32) (local $e i32)
    (local.set $h (call $fnv (local.get $p) (local.get $n)))
    (loop $probe
      (local.set $slot (i32.add (i32.load (global.get $P_TOK_HASH)) (i32.shl (i32.and (local.get $h) (i32.load (global.get $TOK_MASK))) (i32.const 2))))
      (local.set $v (i32.load (local.get $slot)))
      (if (i32.eqz (local.get $v)) (then (return (local.get $slot))))
      (local.set $e (call $piece (i32.sub (local.get $v) (i32.const 1))))
      (if (i32.eq (call $piece_len (local.get $e)) (local.get $n))
        (then (if (call $bytes_eq (call $piece_surface (local.get $e)) (local.get $p) (local.get $n)) (then (return (local.get $slot))))))
      (local.set $h (i32.add (local.get $h) (i32.const 1)))
      (br $probe))
    (unreachable))

  ;; Id of the piece spelled by the n bytes at p, or -1.
  (func $tok_find (param $p i32) (param $n i32) (result i32)
    (i32.sub (i32.load (call $tok_slot (local.get $p) (local.get $n))) (i32.const 1)))

  ;; The byte of a BYTE piece spelled exactly <0xHH> (uppercase hex), or -1.
  (func $byte_of (param $p i32) (param $n i32) (result i32)
    (local $h i32) (local $l i32)
    (if (i32.ne (local.get $n) (i32.const 6)) (then (return (i32.const -1))))
    (if (i32.or (i32.or (i32.ne (i32.load8_u (local.get $p)) (i32.const 60)) (i32.ne (i32.load8_u offset=1 (local.get $p)) (i32.const 48)))
                (i32.or (i32.ne (i32.load8_u offset=2 (local.get $p)) (i32.const 120)) (i32.ne (i32.load8_u offset=5 (local.get $p)) (i32.const 62))))
      (then (return (i32.const -1))))
    (local.set $h (call $hex (i32.load8_u offset=3 (local.get $p))))
    (local.set $l (call $hex (i32.load8_u offset=4 (local.get $p))))
    (if (i32.or (i32.lt_s (local.get $h) (i32.const 0)) (i32.lt_s (local.get $l) (i32.const 0))) (then (return (i32.const -1))))
    (i32.add (i32.shl (local.get $h) (i32.const 4)) (local.get $l)))
  ;; Value of an uppercase hex digit, or -1.
  (func $hex (param $c i32) (result i32)
    (if (i32.and (i32.ge_u (local.get $c) (i32.const 48)) (i32.le_u (local.get $c) (i32.const 57))) (then (return (i32.sub (local.get $c) (i32.const 48)))))
    (if (i32.and (i32.ge_u (local.get $c) (i32.const 65)) (i32.le_u (local.get $c) (i32.const 70))) (then (return (i32.sub (local.get $c) (i32.const 55)))))
    (i32.const -1))

  ;; Reads the tokenizer blob of record `rec` in place with Tokenizer::fromBlob's checks in its order;
  ;; 0, ERR_TOKENIZER (ADDR_ERR_DETAIL: piece index or -1), ERR_VOCAB or ERR_MEMORY.
  (func $tok_load (param $rec i32) (result i32)
    (local $b i32) (local $size i32) (local $n i32) (local $i i32) (local $at i32) (local $e i32) (local $len i32)
    (local $cap i32) (local $r i32)
    (local.set $b (call $d_data (call $rec (local.get $rec))))
    (local.set $size (call $d_elements (call $rec (local.get $rec))))
    (i32.store (global.get $P_TOK_BLOB) (local.get $b))
    (i32.store (global.get $TOK_BLOBLEN) (local.get $size))
    (i32.store (global.get $ERR_DETAIL) (i32.const -1))
    (if (i32.lt_u (local.get $size) (global.get $TB_RECORDS)) (then (return (global.get $ERR_TOKENIZER))))
    (local.set $n (i32.load (i32.add (local.get $b) (global.get $TB_N_PIECES))))
    (if (i32.or (i32.gt_u (i32.load8_u (i32.add (local.get $b) (global.get $TB_ADD_DUMMY_PREFIX))) (i32.const 1))
                (i32.gt_u (i32.load8_u (i32.add (local.get $b) (global.get $TB_BYTE_FALLBACK))) (i32.const 1)))
      (then (return (global.get $ERR_TOKENIZER))))
    (if (i32.load16_u (i32.add (local.get $b) (global.get $TB_RESERVED))) (then (return (global.get $ERR_TOKENIZER))))
    (if (i32.or (i32.lt_u (local.get $n) (i32.const 1)) (i32.gt_u (local.get $n) (i32.const 1048576))) (then (return (global.get $ERR_TOKENIZER))))
    ;; a record holds at least its fixed fields and one byte of surface
    (if (i32.gt_u (local.get $n) (i32.div_u (i32.sub (local.get $size) (global.get $TB_RECORDS))
                                            (i32.add (global.get $TR_SURFACE) (i32.const 1))))
      (then (return (global.get $ERR_TOKENIZER))))
    (memory.copy (global.get $TOK_IDS) (i32.add (local.get $b) (global.get $TB_PAD_ID)) (i32.const 16))  ;; pad, eos, bos, unk
    (i32.store (global.get $TOK_DUMMY) (i32.load8_u (i32.add (local.get $b) (global.get $TB_ADD_DUMMY_PREFIX))))
    (i32.store (global.get $TOK_BYTEFB) (i32.load8_u (i32.add (local.get $b) (global.get $TB_BYTE_FALLBACK))))
    (if (i32.eqz (call $buf (global.get $P_TOK_PIECES) (i32.mul (local.get $n) (global.get $PIECE_SIZE))))
      (then (return (global.get $ERR_MEMORY))))
    (local.set $cap (i32.const 16))
    (loop $c (if (i32.lt_u (local.get $cap) (i32.shl (local.get $n) (i32.const 1))) (then (local.set $cap (i32.shl (local.get $cap) (i32.const 1))) (br $c))))
    (if (i32.eqz (call $buf (global.get $P_TOK_HASH) (i32.shl (local.get $cap) (i32.const 2)))) (then (return (global.get $ERR_MEMORY))))
    (i32.store (global.get $TOK_MASK) (i32.sub (local.get $cap) (i32.const 1)))
    (local.set $at (global.get $TB_RECORDS))
    (loop $parse  ;; records (TR_*): f32 score, u8 type, u16 surface_len, surface
      (i32.store (global.get $ERR_DETAIL) (local.get $i))
      (local.set $r (i32.add (local.get $b) (local.get $at)))
      (if (i32.gt_u (i32.add (local.get $at) (global.get $TR_SURFACE)) (local.get $size)) (then (return (global.get $ERR_TOKENIZER))))
      (if (i32.gt_u (i32.load8_u (i32.add (local.get $r) (global.get $TR_TYPE))) (global.get $TYPE_BYTE))
        (then (return (global.get $ERR_TOKENIZER))))
      (local.set $len (i32.load16_u (i32.add (local.get $r) (global.get $TR_SURFACE_LEN))))
      (if (i32.gt_u (i32.add (i32.add (local.get $at) (global.get $TR_SURFACE)) (local.get $len)) (local.get $size))
        (then (return (global.get $ERR_TOKENIZER))))
      (local.set $e (call $piece (local.get $i)))
      (i32.store (i32.add (local.get $e) (global.get $PIECE_SURFACE)) (i32.add (local.get $r) (global.get $TR_SURFACE)))
      (i32.store (i32.add (local.get $e) (global.get $PIECE_LEN)) (local.get $len))
      (i32.store (i32.add (local.get $e) (global.get $PIECE_SCORE)) (i32.load (i32.add (local.get $r) (global.get $TR_SCORE))))
      (i32.store (i32.add (local.get $e) (global.get $PIECE_TYPE)) (i32.load8_u (i32.add (local.get $r) (global.get $TR_TYPE))))
      (local.set $at (i32.add (local.get $at) (i32.add (global.get $TR_SURFACE) (local.get $len))))
      (br_if $parse (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (i32.store (global.get $ERR_DETAIL) (i32.const -1))
    (if (i32.ne (local.get $at) (local.get $size)) (then (return (global.get $ERR_TOKENIZER))))
    (call $tok_check (local.get $n)))

  ;; checkSpec: per piece (surface, UTF-8, score, duplicates, byte spelling), then the special ids,
  ;; one unknown piece, byte fallback coverage; also fills the hash, byte ids and markers.
  (func $tok_check (param $n i32) (result i32)
    (local $i i32) (local $e i32) (local $slot i32) (local $t i32) (local $by i32) (local $unk i32) (local $k i32)
    (local $bytes i32)
    (if (i32.eqz (call $buf (global.get $P_TOK_BYTE) (i32.const 1024))) (then (return (global.get $ERR_MEMORY))))
    (local.set $bytes (i32.load (global.get $P_TOK_BYTE)))
    (memory.fill (local.get $bytes) (i32.const 255) (i32.const 1024))
    (loop $pieces
      (i32.store (global.get $ERR_DETAIL) (local.get $i))
      (local.set $e (call $piece (local.get $i)))
      (local.set $t (call $piece_type (local.get $e)))
      (if (i32.eqz (call $piece_len (local.get $e))) (then (return (global.get $ERR_TOKENIZER))))
      (if (i32.eqz (call $utf8_valid (call $piece_surface (local.get $e)) (call $piece_len (local.get $e))))
        (then (return (global.get $ERR_TOKENIZER))))
      (if (f32.ne (f32.sub (call $piece_score (local.get $e)) (call $piece_score (local.get $e))) (f32.const 0))  ;; NaN or infinite
        (then (return (global.get $ERR_TOKENIZER))))
      (local.set $slot (call $tok_slot (call $piece_surface (local.get $e)) (call $piece_len (local.get $e))))
      (if (i32.load (local.get $slot)) (then (return (global.get $ERR_TOKENIZER))))
      (i32.store (local.get $slot) (i32.add (local.get $i) (i32.const 1)))
      (if (i32.eq (local.get $t) (global.get $TYPE_BYTE))
        (then
          (local.set $by (call $byte_of (call $piece_surface (local.get $e)) (call $piece_len (local.get $e))))
          (if (i32.lt_s (local.get $by) (i32.const 0)) (then (return (global.get $ERR_TOKENIZER))))
          (i32.store (i32.add (local.get $bytes) (i32.shl (local.get $by) (i32.const 2))) (local.get $i))))
      (if (i32.eq (local.get $t) (global.get $TYPE_UNKNOWN)) (then (local.set $unk (i32.add (local.get $unk) (i32.const 1)))))
      (br_if $pieces (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (i32.store (global.get $ERR_DETAIL) (i32.const -1))
    (loop $specials  ;; pad, eos, bos: CONTROL; unk: UNKNOWN
      (local.set $by (i32.load (i32.add (global.get $TOK_IDS) (i32.shl (local.get $k) (i32.const 2)))))
      (if (i32.ge_u (local.get $by) (local.get $n)) (then (return (global.get $ERR_TOKENIZER))))
      (if (i32.ne (call $piece_type (call $piece (local.get $by)))
                  (select (global.get $TYPE_UNKNOWN) (global.get $TYPE_CONTROL) (i32.eq (local.get $k) (i32.const 3))))
        (then (return (global.get $ERR_TOKENIZER))))
      (br_if $specials (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.const 4))))
    (if (i32.ne (local.get $unk) (i32.const 1)) (then (return (global.get $ERR_TOKENIZER))))
    (if (i32.load (global.get $TOK_BYTEFB))
      (then
        (local.set $k (i32.const 0))
        (loop $cover
          (if (i32.lt_s (i32.load (i32.add (local.get $bytes) (i32.shl (local.get $k) (i32.const 2)))) (i32.const 0))
            (then (return (global.get $ERR_TOKENIZER))))
          (br_if $cover (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.const 256))))))
    (if (i32.gt_u (local.get $n) (call $g (global.get $G_VOCAB))) (then (return (global.get $ERR_VOCAB))))
    (i32.store (global.get $TOK_N) (local.get $n))
    (call $tok_markers (local.get $n)))

  ;; The USER_DEFINED ids, longest surface first (stable), at TOK_MARK.
  (func $tok_markers (param $n i32) (result i32)
    (local $i i32) (local $m i32) (local $j i32) (local $id i32) (local $len i32) (local $p i32)
    (if (i32.eqz (call $buf (global.get $P_TOK_MARK) (i32.shl (local.get $n) (i32.const 2)))) (then (return (global.get $ERR_MEMORY))))
    (local.set $p (i32.load (global.get $P_TOK_MARK)))
    (loop $each
      (if (i32.eq (call $piece_type (call $piece (local.get $i))) (global.get $TYPE_USER_DEFINED))
        (then
          ;; insertion: shift shorter markers right, keep equal lengths in id order
          (local.set $len (call $piece_len (call $piece (local.get $i))))
          (local.set $j (local.get $m))
          (block $placed (loop $shift
            (br_if $placed (i32.eqz (local.get $j)))
            (local.set $id (i32.load (i32.add (local.get $p) (i32.shl (i32.sub (local.get $j) (i32.const 1)) (i32.const 2)))))
            (br_if $placed (i32.ge_u (call $piece_len (call $piece (local.get $id))) (local.get $len)))
            (i32.store (i32.add (local.get $p) (i32.shl (local.get $j) (i32.const 2))) (local.get $id))
            (local.set $j (i32.sub (local.get $j) (i32.const 1)))
            (br $shift)))
          (i32.store (i32.add (local.get $p) (i32.shl (local.get $j) (i32.const 2))) (local.get $i))
          (local.set $m (i32.add (local.get $m) (i32.const 1)))))
      (br_if $each (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (i32.store (global.get $TOK_NMARK) (local.get $m))
    (i32.const 0))

  ;; Ensures the block at `field` (capacity at field + BLOCK_CAP) holds n bytes; 0 when memory cannot grow.
  (func $ensure (param $field i32) (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.load (i32.add (local.get $field) (global.get $BLOCK_CAP))))
      (then
        (i32.store (local.get $field) (call $alloc (local.get $n)))
        (i32.store (i32.add (local.get $field) (global.get $BLOCK_CAP))
          (select (local.get $n) (i32.const 0) (i32.ne (i32.load (local.get $field)) (i32.const 0))))))
    (i32.load (local.get $field)))

  ;; Symbol i of the BPE scratch (SYM_*: begin, bytes (0: merged away), prev, next, frozen).
  (func $sym (param $i i32) (result i32)
    (i32.add (i32.load (global.get $P_TOK_SYM)) (i32.mul (local.get $i) (global.get $SYM_SIZE))))

  ;; Field getters of a symbol (SYM_*).
  (func $sym_begin (param $s i32) (result i32) (i32.load (i32.add (local.get $s) (global.get $SYM_BEGIN))))
  (func $sym_bytes (param $s i32) (result i32) (i32.load (i32.add (local.get $s) (global.get $SYM_BYTES))))
  (func $sym_prev (param $s i32) (result i32) (i32.load (i32.add (local.get $s) (global.get $SYM_PREV))))
  (func $sym_next (param $s i32) (result i32) (i32.load (i32.add (local.get $s) (global.get $SYM_NEXT))))
  (func $sym_frozen (param $s i32) (result i32) (i32.load (i32.add (local.get $s) (global.get $SYM_FROZEN))))

  ;; When symbol i and the next one merge into a NORMAL or USER_DEFINED piece (neither frozen), puts
  ;; that candidate on the merge heap with the piece's score.
  (func $pair (param $text i32) (param $i i32)
    (local $s i32) (local $t i32) (local $id i32) (local $size i32)
    (local.set $s (call $sym (local.get $i)))
    (if (i32.lt_s (call $sym_next (local.get $s)) (i32.const 0)) (then (return)))
    (local.set $t (call $sym (call $sym_next (local.get $s))))
    (if (i32.or (call $sym_frozen (local.get $s)) (call $sym_frozen (local.get $t))) (then (return)))
    (local.set $size (i32.add (call $sym_bytes (local.get $s)) (call $sym_bytes (local.get $t))))
    (local.set $id (call $tok_find (i32.add (local.get $text) (call $sym_begin (local.get $s))) (local.get $size)))
    (if (i32.lt_s (local.get $id) (i32.const 0)) (then (return)))
    (if (i32.eqz (call $mergeable (local.get $id))) (then (return)))
    (call $heap_push (call $piece_score (call $piece (local.get $id))) (local.get $i) (call $sym_next (local.get $s)) (local.get $size)))

  ;; Merge heap entry k (CAND_*: score, left symbol, right symbol, bytes of the merged piece; a candidate
  ;; whose symbols have changed since no longer adds up to it, or no longer neighbours).
  (func $hent (param $k i32) (result i32)
    (i32.add (i32.load (global.get $P_TOK_HEAP)) (i32.mul (local.get $k) (global.get $CAND_SIZE))))
  ;; 1 when entry a is merged before entry b: the higher score, then the leftmost.
  (func $hbefore (param $a i32) (param $b i32) (result i32)
    (local $sa f32) (local $sb f32)
    (local.set $sa (f32.load (i32.add (local.get $a) (global.get $CAND_SCORE))))
    (local.set $sb (f32.load (i32.add (local.get $b) (global.get $CAND_SCORE))))
    (i32.or (f32.gt (local.get $sa) (local.get $sb))
            (i32.and (f32.eq (local.get $sa) (local.get $sb))
                     (i32.lt_s (i32.load (i32.add (local.get $a) (global.get $CAND_LEFT)))
                               (i32.load (i32.add (local.get $b) (global.get $CAND_LEFT)))))))
  (func $hswap (param $a i32) (param $b i32)
    (local $t v128)
    (local.set $t (v128.load (local.get $a)))
    (v128.store (local.get $a) (v128.load (local.get $b)))
    (v128.store (local.get $b) (local.get $t)))

  ;; Adds a candidate to the heap (sifted up).
  (func $heap_push (param $score f32) (param $l i32) (param $r i32) (param $size i32)
    (local $k i32) (local $p i32) (local $e i32)
    (local.set $k (i32.load (global.get $TOK_HEAPN)))
    (i32.store (global.get $TOK_HEAPN) (i32.add (local.get $k) (i32.const 1)))
    (local.set $e (call $hent (local.get $k)))
    (f32.store (i32.add (local.get $e) (global.get $CAND_SCORE)) (local.get $score))
    (i32.store (i32.add (local.get $e) (global.get $CAND_LEFT)) (local.get $l))
    (i32.store (i32.add (local.get $e) (global.get $CAND_RIGHT)) (local.get $r))
    (i32.store (i32.add (local.get $e) (global.get $CAND_BYTES)) (local.get $size))
    (block $done (loop $up
      (br_if $done (i32.eqz (local.get $k)))
      (local.set $p (i32.shr_u (i32.sub (local.get $k) (i32.const 1)) (i32.const 1)))
      (br_if $done (i32.eqz (call $hbefore (call $hent (local.get $k)) (call $hent (local.get $p)))))
      (call $hswap (call $hent (local.get $k)) (call $hent (local.get $p)))
      (local.set $k (local.get $p))
      (br $up))))

  ;; Removes the first entry (the last one takes its place and is sifted down).
  (func $heap_remove_top
    (local $n i32) (local $k i32) (local $c i32)
    (local.set $n (i32.sub (i32.load (global.get $TOK_HEAPN)) (i32.const 1)))
    (i32.store (global.get $TOK_HEAPN) (local.get $n))
    (v128.store (call $hent (i32.const 0)) (v128.load (call $hent (local.get $n))))
    (block $done (loop $down
      (local.set $c (i32.add (i32.shl (local.get $k) (i32.const 1)) (i32.const 1)))
      (br_if $done (i32.ge_u (local.get $c) (local.get $n)))
      (if (i32.lt_u (i32.add (local.get $c) (i32.const 1)) (local.get $n))
        (then (if (call $hbefore (call $hent (i32.add (local.get $c) (i32.const 1))) (call $hent (local.get $c)))
                (then (local.set $c (i32.add (local.get $c) (i32.const 1)))))))
      (br_if $done (i32.eqz (call $hbefore (call $hent (local.get $c)) (call $hent (local.get $k)))))
      (call $hswap (call $hent (local.get $c)) (call $hent (local.get $k)))
      (local.set $k (local.get $c))
      (br $down))))

  ;; The left symbol of the best candidate that is still current (stale ones are dropped), or -1.
  (func $heap_best (result i32)
    (local $e i32) (local $l i32) (local $r i32) (local $size i32) (local $s i32)
    (block $none (loop $next
      (br_if $none (i32.eqz (i32.load (global.get $TOK_HEAPN))))
      (local.set $e (call $hent (i32.const 0)))
      (local.set $l (i32.load (i32.add (local.get $e) (global.get $CAND_LEFT))))
      (local.set $r (i32.load (i32.add (local.get $e) (global.get $CAND_RIGHT))))
      (local.set $size (i32.load (i32.add (local.get $e) (global.get $CAND_BYTES))))
      (call $heap_remove_top)
      (local.set $s (call $sym (local.get $l)))
      (if (i32.and (i32.eq (call $sym_next (local.get $s)) (local.get $r))
                   (i32.eq (i32.add (call $sym_bytes (local.get $s)) (call $sym_bytes (call $sym (local.get $r)))) (local.get $size)))
        (then (return (local.get $l))))
      (br $next)))
    (i32.const -1))

  ;; 1 for NORMAL and USER_DEFINED pieces.
  (func $mergeable (param $id i32) (result i32)
    (local $t i32)
    (local.set $t (call $piece_type (call $piece (local.get $id))))
    (i32.or (i32.eq (local.get $t) (global.get $TYPE_NORMAL)) (i32.eq (local.get $t) (global.get $TYPE_USER_DEFINED))))

  ;; Normalises n bytes at p into TOK_NORM (spaces -> U+2581, optional dummy prefix); returns its length.
  (func $normalise (param $p i32) (param $n i32) (param $dummy i32) (result i32)
    (local $t i32) (local $o i32) (local $c i32) (local $e i32)
    (local.set $t (call $ensure (global.get $P_TOK_NORM) (i32.add (i32.mul (local.get $n) (i32.const 3)) (i32.const 8))))
    (if (i32.eqz (local.get $t)) (then (return (i32.const -1))))
    (local.set $o (local.get $t))
    (if (local.get $dummy) (then (call $meta (local.get $o)) (local.set $o (i32.add (local.get $o) (i32.const 3)))))
    (local.set $e (i32.add (local.get $p) (local.get $n)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $e)))
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 32))
        (then (call $meta (local.get $o)) (local.set $o (i32.add (local.get $o) (i32.const 3))))
        (else (i32.store8 (local.get $o) (local.get $c)) (local.set $o (i32.add (local.get $o) (i32.const 1)))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $l)))
    (i32.sub (local.get $o) (local.get $t)))
  ;; Writes U+2581 as UTF-8 at o.
  (func $meta (param $o i32)
    (i32.store8 (local.get $o) (i32.const 0xE2))
    (i32.store8 offset=1 (local.get $o) (i32.const 0x96))
    (i32.store8 offset=2 (local.get $o) (i32.const 0x81)))

  ;; Length of the longest marker matching at text + at (tl bytes in all), or 0.
  (func $marker_at (param $text i32) (param $at i32) (param $tl i32) (result i32)
    (local $k i32) (local $e i32) (local $len i32)
    (block $none (loop $l
      (br_if $none (i32.ge_u (local.get $k) (i32.load (global.get $TOK_NMARK))))
      (local.set $e (call $piece (i32.load (i32.add (i32.load (global.get $P_TOK_MARK)) (i32.shl (local.get $k) (i32.const 2))))))
      (local.set $len (call $piece_len (local.get $e)))
      (if (i32.le_u (i32.add (local.get $at) (local.get $len)) (local.get $tl))
        (then (if (call $bytes_eq (i32.add (local.get $text) (local.get $at)) (call $piece_surface (local.get $e)) (local.get $len))
                (then (return (local.get $len))))))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br $l)))
    (i32.const 0))

  ;; Splits the normalised text into symbols (markers frozen, else one character); returns the count.
  (func $split (param $text i32) (param $tl i32) (result i32)
    (local $at i32) (local $n i32) (local $len i32) (local $frozen i32) (local $s i32)
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $at) (local.get $tl)))
      (local.set $len (call $marker_at (local.get $text) (local.get $at) (local.get $tl)))
      (local.set $frozen (i32.ne (local.get $len) (i32.const 0)))
      (if (i32.eqz (local.get $frozen))
        (then (local.set $len (i32.and (call $utf8_step (i32.add (local.get $text) (local.get $at)) (i32.sub (local.get $tl) (local.get $at))) (i32.const 255)))))
      (local.set $s (call $sym (local.get $n)))
      (i32.store (i32.add (local.get $s) (global.get $SYM_BEGIN)) (local.get $at))
      (i32.store (i32.add (local.get $s) (global.get $SYM_BYTES)) (local.get $len))
      (i32.store (i32.add (local.get $s) (global.get $SYM_PREV)) (i32.sub (local.get $n) (i32.const 1)))
      (i32.store (i32.add (local.get $s) (global.get $SYM_NEXT)) (select (i32.add (local.get $n) (i32.const 1)) (i32.const -1)
        (i32.lt_u (i32.add (local.get $at) (local.get $len)) (local.get $tl))))
      (i32.store (i32.add (local.get $s) (global.get $SYM_FROZEN)) (local.get $frozen))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (local.set $at (i32.add (local.get $at) (local.get $len)))
      (br $l)))
    (local.get $n))

  ;; Repeatedly merges the best pair (highest score, leftmost on ties) until none is left. The
  ;; candidates wait in a binary heap, so n symbols take O(n log n): a merge changes only the pairs
  ;; on either side of the merged symbol, which are pushed again; the entries it made stale are dropped
  ;; when they come up.
  (func $merge_all (param $text i32) (param $n i32)
    (local $i i32) (local $best i32) (local $s i32) (local $r i32) (local $rs i32)
    (i32.store (global.get $TOK_HEAPN) (i32.const 0))
    (loop $init
      (if (i32.lt_u (local.get $i) (local.get $n))
        (then (call $pair (local.get $text) (local.get $i)) (local.set $i (i32.add (local.get $i) (i32.const 1))) (br $init))))
    (block $done (loop $round
      (local.set $best (call $heap_best))
      (br_if $done (i32.lt_s (local.get $best) (i32.const 0)))
      (local.set $s (call $sym (local.get $best)))
      (local.set $r (call $sym_next (local.get $s)))
      (local.set $rs (call $sym (local.get $r)))
      (i32.store (i32.add (local.get $s) (global.get $SYM_BYTES))
        (i32.add (call $sym_bytes (local.get $s)) (call $sym_bytes (local.get $rs))))
      (i32.store (i32.add (local.get $s) (global.get $SYM_NEXT)) (call $sym_next (local.get $rs)))
      (if (i32.ge_s (call $sym_next (local.get $rs)) (i32.const 0))
        (then (i32.store (i32.add (call $sym (call $sym_next (local.get $rs))) (global.get $SYM_PREV)) (local.get $best))))
      (i32.store (i32.add (local.get $rs) (global.get $SYM_BYTES)) (i32.const 0))
      (i32.store (i32.add (local.get $rs) (global.get $SYM_NEXT)) (i32.const -1))
      (if (i32.ge_s (call $sym_prev (local.get $s)) (i32.const 0))
        (then (call $pair (local.get $text) (call $sym_prev (local.get $s)))))
      (call $pair (local.get $text) (local.get $best))
      (br $round))))

  ;; encode (mode 1: with the dummy prefix when the tokenizer sets it) or encodeRaw (mode 0) of the n
  ;; UTF-8 bytes at p; ids to out (cap ids). Returns the count, or -ERR_* (NO_TOKENIZER, UTF8,
  ;; CAPACITY, MEMORY).
  (func (export "encode") (param $p i32) (param $n i32) (param $mode i32) (param $out i32) (param $cap i32) (result i32)
    (local $text i32) (local $tl i32) (local $ns i32) (local $i i32) (local $s i32) (local $id i32) (local $k i32) (local $count i32)
    (if (i32.eqz (i32.load (global.get $TOK_N))) (then (return (i32.sub (i32.const 0) (global.get $ERR_NO_TOKENIZER)))))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (if (i32.eqz (call $utf8_valid (local.get $p) (local.get $n))) (then (return (i32.sub (i32.const 0) (global.get $ERR_UTF8)))))
    (local.set $tl (call $normalise (local.get $p) (local.get $n) (i32.and (local.get $mode) (i32.load (global.get $TOK_DUMMY)))))
    (if (i32.lt_s (local.get $tl) (i32.const 0)) (then (return (i32.sub (i32.const 0) (global.get $ERR_MEMORY)))))
    (local.set $text (i32.load (global.get $P_TOK_NORM)))
    (if (i32.eqz (call $ensure (global.get $P_TOK_SYM) (i32.mul (i32.add (local.get $tl) (i32.const 1)) (global.get $SYM_SIZE))))
      (then (return (i32.sub (i32.const 0) (global.get $ERR_MEMORY)))))
    ;; the heap: three entries per symbol (every first pair, then two per merge; at most one merge per symbol)
    (if (i32.eqz (call $ensure (global.get $P_TOK_HEAP)
                   (i32.mul (i32.mul (i32.add (local.get $tl) (i32.const 1)) (i32.const 3)) (global.get $CAND_SIZE))))
      (then (return (i32.sub (i32.const 0) (global.get $ERR_MEMORY)))))
    (local.set $ns (call $split (local.get $text) (local.get $tl)))
    (call $merge_all (local.get $text) (local.get $ns))
    (block $done (loop $emit
      (br_if $done (i32.lt_s (local.get $i) (i32.const 0)))
      (local.set $s (call $sym (local.get $i)))
      (local.set $id (call $tok_find (i32.add (local.get $text) (call $sym_begin (local.get $s))) (call $sym_bytes (local.get $s))))
      (if (i32.and (i32.ge_s (local.get $id) (i32.const 0))
                   (i32.ne (call $piece_type (call $piece (select (local.get $id) (i32.const 0) (i32.ge_s (local.get $id) (i32.const 0)))))
                           (global.get $TYPE_UNKNOWN)))
        (then
          (if (i32.ge_u (local.get $count) (local.get $cap)) (then (return (i32.sub (i32.const 0) (global.get $ERR_CAPACITY)))))
          (i32.store (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2))) (local.get $id))
          (local.set $count (i32.add (local.get $count) (i32.const 1))))
        (else
          (if (i32.load (global.get $TOK_BYTEFB))
            (then
              (local.set $k (i32.const 0))
              (loop $bytes
                (if (i32.ge_u (local.get $count) (local.get $cap)) (then (return (i32.sub (i32.const 0) (global.get $ERR_CAPACITY)))))
                (i32.store (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2)))
                  (i32.load (i32.add (i32.load (global.get $P_TOK_BYTE))
                    (i32.shl (i32.load8_u (i32.add (i32.add (local.get $text) (call $sym_begin (local.get $s))) (local.get $k)))
                             (i32.const 2)))))
                (local.set $count (i32.add (local.get $count) (i32.const 1)))
                (br_if $bytes (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (call $sym_bytes (local.get $s))))))
            (else
              (if (i32.ge_u (local.get $count) (local.get $cap)) (then (return (i32.sub (i32.const 0) (global.get $ERR_CAPACITY)))))
              (i32.store (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2)))
                (i32.load (i32.add (global.get $TOK_IDS) (global.get $IDS_UNK))))
              (local.set $count (i32.add (local.get $count) (i32.const 1)))))))
      (local.set $i (call $sym_next (local.get $s)))
      (br $emit)))
    (local.get $count))

  ;; The bytes piece `id` contributes to decoded text (U+2581 as a space, <0xHH> as its byte, control
  ;; and unknown as nothing), written to out; returns the count or -ERR_TOKEN / -ERR_NO_TOKENIZER.
  (func (export "piece_bytes") (param $id i32) (param $out i32) (result i32)
    (local $e i32) (local $t i32) (local $p i32) (local $end i32) (local $o i32)
    (if (i32.eqz (i32.load (global.get $TOK_N))) (then (return (i32.sub (i32.const 0) (global.get $ERR_NO_TOKENIZER)))))
    (if (i32.ge_u (local.get $id) (i32.load (global.get $TOK_N))) (then (return (i32.sub (i32.const 0) (global.get $ERR_TOKEN)))))
    (local.set $e (call $piece (local.get $id)))
    (local.set $t (call $piece_type (local.get $e)))
    (if (i32.or (i32.eq (local.get $t) (global.get $TYPE_UNKNOWN)) (i32.eq (local.get $t) (global.get $TYPE_CONTROL)))
      (then (return (i32.const 0))))
    (if (i32.eq (local.get $t) (global.get $TYPE_BYTE))
      (then (i32.store8 (local.get $out) (call $byte_of (call $piece_surface (local.get $e)) (call $piece_len (local.get $e))))
            (return (i32.const 1))))
    (local.set $p (call $piece_surface (local.get $e)))
    (local.set $end (i32.add (local.get $p) (call $piece_len (local.get $e))))
    (local.set $o (local.get $out))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      (if (i32.and (i32.le_u (i32.add (local.get $p) (i32.const 3)) (local.get $end))
                   (i32.and (i32.eq (i32.load8_u (local.get $p)) (i32.const 0xE2))
                            (i32.and (i32.eq (i32.load8_u offset=1 (local.get $p)) (i32.const 0x96)) (i32.eq (i32.load8_u offset=2 (local.get $p)) (i32.const 0x81)))))
        (then (i32.store8 (local.get $o) (i32.const 32)) (local.set $p (i32.add (local.get $p) (i32.const 3))))
        (else (i32.store8 (local.get $o) (i32.load8_u (local.get $p))) (local.set $p (i32.add (local.get $p) (i32.const 1)))))
      (local.set $o (i32.add (local.get $o) (i32.const 1)))
      (br $l)))
    (i32.sub (local.get $o) (local.get $out)))

  ;; Pieces of the tokenizer (0 when the archive has none).
  (func (export "tok_size") (result i32) (i32.load (global.get $TOK_N)))
)
