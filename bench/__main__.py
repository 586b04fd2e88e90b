from bench.harness import main

main()
