from sediment.cli import main

main()
