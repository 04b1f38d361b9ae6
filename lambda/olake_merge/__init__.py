"""The express lane's merge function (README, "Express lane")."""
