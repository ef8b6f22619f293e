# Sourced, from the repository root, by the scripts that run on the lent device
# machine, which has no Node: unless a node is on PATH already, unpack the
# carried copy (.gpu/node.xz; xz, else Python's lzma) and put it first on PATH.
if ! command -v node >/dev/null; then
  mkdir -p .gpu/bin
  if [ ! -x .gpu/bin/node ]; then
    if command -v xz >/dev/null; then xz -d -c .gpu/node.xz > .gpu/bin/node
    else python3 -c 'import lzma,shutil; shutil.copyfileobj(lzma.open(".gpu/node.xz"), open(".gpu/bin/node","wb"))'; fi
    chmod +x .gpu/bin/node
  fi
  export PATH="$PWD/.gpu/bin:$PATH"
fi
