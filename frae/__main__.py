from frae.cli import main

main()
