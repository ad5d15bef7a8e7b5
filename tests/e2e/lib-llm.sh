# lib-llm.sh: helpers for the LLM end-to-end tests (sourced after lib.sh;
# not a test itself).
PY=${PY:-/usr/bin/python3}

# fakellm NAME SCRIPT: start tests/fakes/fakellm.py on a free port with the
# rules in SCRIPT, logging requests to $TMP/NAME.log; sets LLM_PORT.
fakellm() {
	rm -f "$TMP/$1.port"
	$PY "$KB_ROOT/tests/fakes/fakellm.py" --port-file "$TMP/$1.port" \
		--log "$TMP/$1.log" --script "$2" 2>"$TMP/$1.err" &
	t_bg $!
	wait_for 10 test -s "$TMP/$1.port" || { fail "fake LLM $1 started" "$(cat "$TMP/$1.err")"; t_done; }
	LLM_PORT=$(cat "$TMP/$1.port")
}

# llm_config FILE PORT KEYVAR [LINE...]: a server config whose llm section
# has one openai model on the fake (key in $KEYVAR, $10 per million tokens
# each way, retries after 50 ms) and the LINEs (llm keys, two-space
# indented). Append top-level keys (data_dir, budgets) with >>.
llm_config() {
	f=$1 port=$2 keyvar=$3
	shift 3
	{
		echo "llm:"
		echo "  backoff_ms: 50"
		echo "  models:"
		echo "    - provider: openai"
		echo "      base_url: http://127.0.0.1:$port/v1"
		echo "      model: fake-gpt"
		echo "      api_key_env: $keyvar"
		echo "      price_in: 10"
		echo "      price_out: 10"
		for l in "$@"; do echo "$l"; done
	} >"$f"
}

# prompts LOG EXPR: a Python expression over the prompts `p` of a fake's log.
prompts() {
	$PY -c 'import json,sys; p=[json.loads(l)["prompt"] for l in open(sys.argv[1])]; print(eval(sys.argv[2]))' "$1" "$2"
}
